package record

import (
	v1 "k8s.io/api/core/v1"

	"github.com/heraldk8s/herald/internal/eventname"
)

// Bounds of the fields the recorder writes. The API server does not bound
// most fields of a core/v1 Event written without EventTime (it stored a
// 1 MB reason), so herald applies the limits events.k8s.io/v1 validates
// (k8s.io/kubernetes pkg/apis/core/validation/events.go, which counts the
// bytes of the string it decoded: invalid UTF-8 arrives as U+FFFD): a field
// whose cut keeps its meaning is made valid UTF-8 and cut, on a rune
// boundary (eventname.Valid); a reference that would be
// wrong once cut is refused with a counted drop.
const (
	// maxReasonLength is the longest reason kept (ReasonLengthLimit). A
	// reason is a short CamelCase word; a longer one is cut.
	maxReasonLength = 128
	// maxSourceLength is the longest source component and host kept, and
	// so of the reporting controller and instance copied from them
	// (ReportingInstanceLengthLimit; events.k8s.io bounds reportingController
	// as a qualified name, longer than this). Longer ones are cut.
	maxSourceLength = 128
	// maxRefFieldLength is the longest name, kind, API version, UID,
	// resource version and field path of the involved object accepted: far
	// above any real object's, low enough that a corrupt reference cannot
	// make a megabyte event. An event with a longer one is refused.
	maxRefFieldLength = 1024
	// maxNamespaceLength: a namespace is a DNS-1123 label.
	maxNamespaceLength = 63
)

// validNamespace reports whether ns is empty (cluster-scoped) or a valid
// DNS-1123 label, as the API server requires of an event's namespace. It
// does not allocate.
func validNamespace(ns string) bool {
	if ns == "" {
		return true
	}
	if len(ns) > maxNamespaceLength {
		return false
	}
	for i := 0; i < len(ns); i++ {
		c := ns[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(ns)-1:
		default:
			return false
		}
	}
	return true
}

// refProblem returns what is wrong with ref as the involved object of an
// event, or "" if it can be written as it is. It does not allocate.
func refProblem(ref *v1.ObjectReference) string {
	switch {
	case !validNamespace(ref.Namespace):
		return "namespace is not a DNS-1123 label"
	case len(ref.Name) > maxRefFieldLength, len(ref.Kind) > maxRefFieldLength,
		len(ref.APIVersion) > maxRefFieldLength, len(ref.UID) > maxRefFieldLength,
		len(ref.ResourceVersion) > maxRefFieldLength, len(ref.FieldPath) > maxRefFieldLength:
		return "a field is longer than 1024 bytes"
	}
	return ""
}

// boundSource returns src with its component and host made valid UTF-8 and
// cut to maxSourceLength bytes (eventname.Valid). It allocates nothing for
// valid strings.
func boundSource(src v1.EventSource) v1.EventSource {
	src.Component = eventname.Valid(src.Component, maxSourceLength)
	src.Host = eventname.Valid(src.Host, maxSourceLength)
	return src
}
