package record

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestKindCacheBounded: however many schemes pass through it, the kind
// cache holds at most maxKindSchemes of them.
func TestKindCacheBounded(t *testing.T) {
	var c kindCache
	keep := make([]*runtime.Scheme, 0, 50) // all alive: only the bound limits the cache
	for i := range 50 {
		s := runtime.NewScheme()
		s.AddKnownTypes(schema.GroupVersion{Group: fmt.Sprint("g", i), Version: "v1"}, &v1.Pod{})
		keep = append(keep, s)
		ref, err := c.reference(s, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}})
		if err != nil || ref.APIVersion != fmt.Sprint("g", i, "/v1") {
			t.Fatalf("reference = %+v, %v", ref, err)
		}
	}
	if schemes, types := c.len(); schemes != maxKindSchemes || types != maxKindSchemes {
		t.Fatalf("cache holds %d schemes and %d types, want %d of each", schemes, types, maxKindSchemes)
	}
	// The newest scheme is still served from the cache.
	if _, ok := c.slot(keep[49]).kinds.Load(typeOfPod); !ok {
		t.Fatal("newest scheme not cached")
	}
}

var typeOfPod = reflect.TypeOf(&v1.Pod{})

// TestShutdownErrorText: the error names the abandoned events and wraps the
// flush error only when there is one.
func TestShutdownErrorText(t *testing.T) {
	if err := shutdownError(3, nil); err == nil || strings.Contains(err.Error(), "%!") || err.Error() != "record: shutdown abandoned 3 events" {
		t.Errorf("shutdownError(3, nil) = %v", err)
	}
	if err := shutdownError(2, context.DeadlineExceeded); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("shutdownError(2, deadline) = %v", err)
	}
	if err := shutdownError(0, context.DeadlineExceeded); err != nil {
		t.Errorf("shutdownError(0, deadline) = %v", err)
	}
}
