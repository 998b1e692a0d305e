package record

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"weak"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ref "k8s.io/client-go/tools/reference"
)

// errNilObject is returned for a nil object or a typed nil pointer.
var errNilObject = errors.New("record: can't reference a nil object")

// kindCache remembers the GroupVersionKind a scheme gives each Go type, so
// the recorder does not ask the scheme (and allocate) on every event.
//
// It is bounded and keeps no scheme alive: it holds the kinds of at most
// maxKindSchemes schemes, the most recently added first, each through a weak
// pointer (a scheme nobody else uses any more is collected, and its slot
// goes when a newer scheme needs room), and at most maxKindsPerScheme types
// per scheme (a full slot starts again empty).
type kindCache struct {
	slots atomic.Pointer[[]*kindSlot] // replaced, never modified, under mu
	mu    sync.Mutex
}

// Bounds of a kindCache. A controller has one scheme or a few, and a few
// dozen kinds it records events about.
const (
	maxKindSchemes    = 8
	maxKindsPerScheme = 1024
)

// kindSlot is the cache of one scheme.
type kindSlot struct {
	scheme weak.Pointer[runtime.Scheme]
	kinds  sync.Map // reflect.Type -> kindInfo
	n      atomic.Int64
}

// slot returns the slot of scheme, adding it (and dropping the oldest or
// dead ones) if there is none.
func (c *kindCache) slot(scheme *runtime.Scheme) *kindSlot {
	if p := c.slots.Load(); p != nil {
		for _, s := range *p {
			if s.scheme.Value() == scheme {
				return s
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var old []*kindSlot
	if p := c.slots.Load(); p != nil {
		old = *p
	}
	for _, s := range old {
		if s.scheme.Value() == scheme {
			return s
		}
	}
	ns := &kindSlot{scheme: weak.Make(scheme)}
	slots := []*kindSlot{ns}
	for _, s := range old {
		if len(slots) == maxKindSchemes {
			break
		}
		if s.scheme.Value() != nil {
			slots = append(slots, s)
		}
	}
	c.slots.Store(&slots)
	return ns
}

// len returns the number of schemes and of types the cache holds.
func (c *kindCache) len() (schemes, types int) {
	if p := c.slots.Load(); p != nil {
		for _, s := range *p {
			schemes++
			types += int(s.n.Load())
		}
	}
	return schemes, types
}

// reference returns the ObjectReference client-go's reference.GetReference
// would return for obj, faster for the common case (an object with
// ObjectMeta), and without panicking on typed nil pointers. Unlike client-go,
// an *ObjectReference argument is copied, not aliased.
func (c *kindCache) reference(scheme *runtime.Scheme, obj runtime.Object) (*v1.ObjectReference, error) {
	r := new(v1.ObjectReference)
	if err := c.referenceInto(r, scheme, obj); err != nil {
		return nil, err
	}
	return r, nil
}

// referenceInto is reference writing into *dst, so that a recorder builds
// the reference inside the event it allocates anyway. On error *dst is
// left zero.
func (c *kindCache) referenceInto(dst *v1.ObjectReference, scheme *runtime.Scheme, obj runtime.Object) (err error) {
	if obj == nil {
		return errNilObject
	}
	if rv := reflect.ValueOf(obj); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return errNilObject
	}
	defer func() {
		// A broken runtime.Object (a nil embedded field, say) must not take
		// down the controller.
		if p := recover(); p != nil {
			*dst = v1.ObjectReference{}
			err = fmt.Errorf("record: cannot build a reference to %T: %v", obj, p)
		}
	}()
	if in, ok := obj.(*v1.ObjectReference); ok {
		*dst = *in
		return nil
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		r, err := ref.GetReference(scheme, obj) // list-only metadata, or an error
		if err != nil {
			return err
		}
		*dst = *r
		return nil
	}
	var k kindInfo
	ko := obj.GetObjectKind()
	if kind, apiVersion := storedKind(ko); kind != "" && apiVersion != "" {
		k = kindInfo{kind: kind, apiVersion: apiVersion}
	} else if gvk := ko.GroupVersionKind(); !gvk.Empty() {
		k = kindInfo{kind: gvk.Kind, apiVersion: gvk.GroupVersion().String()}
	} else if k, err = c.lookup(scheme, obj); err != nil {
		return err
	}
	*dst = v1.ObjectReference{
		Kind:            k.kind,
		APIVersion:      k.apiVersion,
		Name:            m.GetName(),
		Namespace:       m.GetNamespace(),
		UID:             m.GetUID(),
		ResourceVersion: m.GetResourceVersion(),
	}
	return nil
}

// kindInfo is what a reference needs of a kind: its name and its API
// version string ("apps/v1"), made once per type rather than per event.
type kindInfo struct{ kind, apiVersion string }

func (c *kindCache) lookup(scheme *runtime.Scheme, obj runtime.Object) (kindInfo, error) {
	if scheme == nil {
		return kindInfo{}, errors.New("record: scheme is required to look up the kind of an object without TypeMeta")
	}
	slot, typ := c.slot(scheme), reflect.TypeOf(obj)
	if v, ok := slot.kinds.Load(typ); ok {
		return v.(kindInfo), nil
	}
	gvks, _, err := scheme.ObjectKinds(obj)
	if err != nil {
		return kindInfo{}, err
	}
	if len(gvks) == 0 || gvks[0].Empty() {
		return kindInfo{}, fmt.Errorf("record: unexpected kinds registered for %T: %v", obj, gvks)
	}
	k := kindInfo{kind: gvks[0].Kind, apiVersion: gvks[0].GroupVersion().String()}
	if _, loaded := slot.kinds.Swap(typ, k); !loaded && slot.n.Add(1) > maxKindsPerScheme {
		slot.kinds.Clear()
		slot.n.Store(0)
	}
	return k, nil
}

// storedKind returns the kind and apiVersion an object carries as strings
// (TypeMeta, unstructured), so that using them allocates nothing; empty if
// it does not carry them that way.
func storedKind(ko schema.ObjectKind) (kind, apiVersion string) {
	switch t := ko.(type) {
	case *metav1.TypeMeta:
		return t.Kind, t.APIVersion
	case interface {
		GetKind() string
		GetAPIVersion() string
	}:
		return t.GetKind(), t.GetAPIVersion()
	}
	return "", ""
}
