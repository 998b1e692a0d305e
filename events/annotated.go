package events

import "k8s.io/apimachinery/pkg/runtime"

// AnnotatedEventRecorder is the optional extension of EventRecorder that
// attaches annotations to the events it records. Every recorder of this
// package implements it.
//
// It has exactly the method set of client-go's events.AnnotatedEventRecorder
// but is declared here rather than aliased to it: client-go added that
// interface in v0.37, and herald builds with k8s.io/client-go v0.35 and v0.36
// too (the compatibility range, `make compat`), where it does not exist. As
// the method sets are identical, an interface value of either type is
// assignable to the other and a type assertion to either succeeds on the same
// values; only composite types built from them (slices, func signatures)
// differ. TestAnnotatedEventRecorderMatchesClientGo checks the method set
// against client-go's recorders whenever they have AnnotatedEventf.
type AnnotatedEventRecorder interface {
	AnnotatedEventf(regarding runtime.Object, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...interface{})
}
