// Package assert implements the few functions of
// github.com/stretchr/testify/assert that the client-go tests ported to
// herald use (record/clientgo_compat_test.go), with the same signatures and
// meaning, so the ported tests change only their import path and herald
// does not depend on testify.
package assert

import (
	"fmt"
	"reflect"
	"time"
)

// TestingT is the part of testing.TB the functions need.
type TestingT interface {
	Errorf(format string, args ...any)
}

// CollectT collects the failures of one try of EventuallyWithT.
type CollectT struct {
	errors []string
}

// Errorf records a failure of the current try.
func (c *CollectT) Errorf(format string, args ...any) {
	c.errors = append(c.errors, fmt.Sprintf(format, args...))
}

// Equal reports whether expected and actual are deeply equal, and records a
// failure with t if not.
func Equal(t TestingT, expected, actual any, msgAndArgs ...any) bool {
	if reflect.DeepEqual(expected, actual) {
		return true
	}
	t.Errorf("Not equal: %s\nexpected: %#v\nactual  : %#v", message(msgAndArgs), expected, actual)
	return false
}

// EventuallyWithT calls condition every tick until one call records no
// failure, and reports whether that happened within waitFor; if not, it
// records with t the failures of the last call.
func EventuallyWithT(t TestingT, condition func(collect *CollectT), waitFor, tick time.Duration, msgAndArgs ...any) bool {
	deadline := time.Now().Add(waitFor)
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		c := &CollectT{}
		condition(c)
		if len(c.errors) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			for _, e := range c.errors {
				t.Errorf("Condition never satisfied: %s: %s", message(msgAndArgs), e)
			}
			return false
		}
		<-ticker.C
	}
}

func message(msgAndArgs []any) string {
	switch len(msgAndArgs) {
	case 0:
		return ""
	case 1:
		return fmt.Sprint(msgAndArgs[0])
	}
	if f, ok := msgAndArgs[0].(string); ok {
		return fmt.Sprintf(f, msgAndArgs[1:]...)
	}
	return fmt.Sprint(msgAndArgs...)
}

// EqualError reports whether err is an error whose text is errString, and
// records a failure with t if not.
func EqualError(t TestingT, err error, errString string, msgAndArgs ...any) bool {
	if err == nil {
		t.Errorf("An error is expected but got nil. %s", message(msgAndArgs))
		return false
	}
	if err.Error() != errString {
		t.Errorf("Error message not equal: %s\nexpected: %q\nactual  : %q", message(msgAndArgs), errString, err.Error())
		return false
	}
	return true
}

// False reports whether value is false, and records a failure with t if
// not.
func False(t TestingT, value bool, msgAndArgs ...any) bool {
	if value {
		t.Errorf("Should be false: %s", message(msgAndArgs))
		return false
	}
	return true
}
