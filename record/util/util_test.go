package util_test

import (
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cgutil "k8s.io/client-go/tools/record/util"

	"github.com/heraldk8s/herald/record/util"
)

func TestValidateEventType(t *testing.T) {
	for _, typ := range []string{"Normal", "Warning", "", "normal", "Error"} {
		if got, want := util.ValidateEventType(typ), cgutil.ValidateEventType(typ); got != want {
			t.Errorf("ValidateEventType(%q) = %v, client-go %v", typ, got, want)
		}
	}
}

func TestIsKeyNotFoundError(t *testing.T) {
	nf := apierrors.NewNotFound(schema.GroupResource{Resource: "events"}, "e")
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{nf, true},
		{fmt.Errorf("patch: %w", nf), true}, // client-go: false
		{apierrors.NewAlreadyExists(schema.GroupResource{Resource: "events"}, "e"), false},
		{fmt.Errorf("404"), false},
	}
	for _, c := range cases {
		if got := util.IsKeyNotFoundError(c.err); got != c.want {
			t.Errorf("IsKeyNotFoundError(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestGenerateEventName(t *testing.T) {
	for _, ref := range []string{"pod-1", "a.b", "", "UPPER", "::1", string(make([]byte, 300))} {
		got := util.GenerateEventName(ref, 0x18eac60e525d9eaf)
		if errs := validation.NameIsDNSSubdomain(got, false); len(errs) > 0 {
			t.Errorf("GenerateEventName(%q) = %q, invalid: %v", ref, got, errs)
		}
		plain := fmt.Sprintf("%s.%x", ref, 0x18eac60e525d9eaf)
		if len(validation.NameIsDNSSubdomain(plain, false)) == 0 {
			// Where client-go keeps "<ref>.<hex>", herald's name is the same.
			if want := cgutil.GenerateEventName(ref, 0x18eac60e525d9eaf); got != want {
				t.Errorf("GenerateEventName(%q) = %q, client-go %q", ref, got, want)
			}
		}
	}
}
