package record

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	ref "k8s.io/client-go/tools/reference"
)

// oddKind is an object whose ObjectKind is neither TypeMeta nor
// unstructured's: its kind is read through GroupVersionKind.
type oddKind struct {
	metav1.ObjectMeta
	gvk schema.GroupVersionKind
}

func (o *oddKind) GetObjectKind() schema.ObjectKind                { return o }
func (o *oddKind) SetGroupVersionKind(gvk schema.GroupVersionKind) { o.gvk = gvk }
func (o *oddKind) GroupVersionKind() schema.GroupVersionKind       { return o.gvk }
func (o *oddKind) DeepCopyObject() runtime.Object                  { c := *o; return &c }

// unregistered is an object no scheme knows, without TypeMeta.
type unregistered struct {
	metav1.TypeMeta
	metav1.ObjectMeta
}

func (u *unregistered) DeepCopyObject() runtime.Object { c := *u; return &c }

// TestReferenceMatchesClientGo: the reference a recorder builds is the one
// client-go's reference.GetReference builds, for every shape of object a
// controller passes (typed with and without TypeMeta, unstructured,
// metadata-only, a list, a reference, a kind read through its
// GroupVersionKind), and both refuse an object no scheme knows.
func TestReferenceMatchesClientGo(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "n", Namespace: "ns", UID: "u", ResourceVersion: "7"}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetName("w")
	u.SetNamespace("ns")
	u.SetUID("uw")
	u.SetResourceVersion("9")
	for _, obj := range []runtime.Object{
		&v1.Pod{ObjectMeta: meta},
		&v1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: meta},
		u,
		&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "Deployment", APIVersion: "apps/v1"}, ObjectMeta: meta},
		&v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "11"}},
		&v1.ObjectReference{Kind: "Node", Name: "node-1", FieldPath: "spec"},
		&oddKind{ObjectMeta: meta, gvk: schema.GroupVersionKind{Group: "g.io", Version: "v2", Kind: "Odd"}},
	} {
		t.Run(fmt.Sprintf("%T", obj), func(t *testing.T) {
			want, err := ref.GetReference(scheme.Scheme, obj)
			if err != nil {
				t.Fatalf("client-go: %v", err)
			}
			var c kindCache
			for range 2 { // the second from the kind cache
				got, err := c.reference(scheme.Scheme, obj)
				if err != nil || *got != *want {
					t.Fatalf("reference = %+v, %v; client-go's %+v", got, err, want)
				}
			}
		})
	}
	t.Run("unregistered", func(t *testing.T) {
		obj := &unregistered{ObjectMeta: meta}
		if _, err := ref.GetReference(scheme.Scheme, obj); err == nil {
			t.Fatal("client-go built a reference to an unregistered type")
		}
		var c kindCache
		if r, err := c.reference(scheme.Scheme, obj); err == nil {
			t.Fatalf("reference to an unregistered type = %+v", r)
		}
	})
}

// TestReferenceWithNilScheme: a recorder made with a nil scheme (client-go
// would dereference it) refuses an object whose kind only a scheme can
// tell, with an error that says so, and still references the others.
func TestReferenceWithNilScheme(t *testing.T) {
	var c kindCache
	if r, err := c.reference(nil, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}); err == nil || !strings.Contains(err.Error(), "scheme is required") {
		t.Fatalf("reference without a scheme = %+v, %v; want an error naming the scheme", r, err)
	}
	pod := &v1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	if r, err := c.reference(nil, pod); err != nil || r.Kind != "Pod" || r.APIVersion != "v1" || r.Name != "p" {
		t.Fatalf("reference with TypeMeta and no scheme = %+v, %v", r, err)
	}
}

// TestKindCacheStartsAgainWhenFull: a scheme's slot holds at most
// maxKindsPerScheme types; one more empties it, and a kind looked up
// after that is right and cached again.
func TestKindCacheStartsAgainWhenFull(t *testing.T) {
	var c kindCache
	s := runtime.NewScheme()
	s.AddKnownTypes(schema.GroupVersion{Version: "v1"}, &v1.Pod{})
	slot := c.slot(s)
	for i := range maxKindsPerScheme {
		slot.kinds.Store(i, kindInfo{kind: "filler"}) // types of other objects
	}
	slot.n.Store(maxKindsPerScheme)
	if r, err := c.reference(s, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}); err != nil || r.Kind != "Pod" {
		t.Fatalf("reference = %+v, %v", r, err)
	}
	if n := slot.n.Load(); n != 0 {
		t.Fatalf("a full slot holds %d types after one more, want it emptied", n)
	}
	if _, ok := slot.kinds.Load(0); ok {
		t.Fatal("a full slot kept its old types")
	}
	if r, err := c.reference(s, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}); err != nil || r.Kind != "Pod" {
		t.Fatalf("reference after the slot emptied = %+v, %v", r, err)
	}
	if _, ok := slot.kinds.Load(typeOfPod); !ok || slot.n.Load() != 1 {
		t.Fatalf("the kind looked up after the slot emptied is not cached (%d types)", slot.n.Load())
	}
}
