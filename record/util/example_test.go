package util_test

import (
	"fmt"
	"time"

	"github.com/heraldk8s/herald/record/util"
)

// An event's name is its object's name and the time in hexadecimal
// nanoseconds, as client-go names it; a name that would not be a valid
// DNS-1123 subdomain is made into one deterministically (client-go falls
// back to a random UUID).
func ExampleGenerateEventName() {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()
	fmt.Println(util.GenerateEventName("web-0", at))
	fmt.Println(util.GenerateEventName("My_Pod", at))
	// Output:
	// web-0.1886caf21c963200
	// my-pod.1886caf21c963200
}

// Only Normal and Warning are event types the API server accepts.
func ExampleValidateEventType() {
	for _, t := range []string{"Normal", "Warning", "Error", "normal"} {
		fmt.Println(t, util.ValidateEventType(t))
	}
	// Output:
	// Normal true
	// Warning true
	// Error false
	// normal false
}
