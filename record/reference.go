package record

import (
	"errors"
	"fmt"
	"reflect"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ref "k8s.io/client-go/tools/reference"
)

// errNilObject is returned for a nil object or a typed nil pointer.
var errNilObject = errors.New("record: can't reference a nil object")

// kindCache remembers the GroupVersionKind the scheme gives each Go type, so
// the recorder does not ask the scheme (and allocate) on every event.
type kindCache struct{ m sync.Map } // kindKey -> schema.GroupVersionKind

type kindKey struct {
	scheme *runtime.Scheme
	typ    reflect.Type
}

// reference returns the ObjectReference client-go's reference.GetReference
// would return for obj, faster for the common case (an object with
// ObjectMeta), and without panicking on typed nil pointers. Unlike client-go,
// an *ObjectReference argument is copied, not aliased.
func (c *kindCache) reference(scheme *runtime.Scheme, obj runtime.Object) (r *v1.ObjectReference, err error) {
	if obj == nil {
		return nil, errNilObject
	}
	if rv := reflect.ValueOf(obj); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return nil, errNilObject
	}
	defer func() {
		// A broken runtime.Object (a nil embedded field, say) must not take
		// down the controller.
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("record: cannot build a reference to %T: %v", obj, p)
		}
	}()
	if in, ok := obj.(*v1.ObjectReference); ok {
		out := *in
		return &out, nil
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return ref.GetReference(scheme, obj) // list-only metadata, or an error
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		if gvk, err = c.lookup(scheme, obj); err != nil {
			return nil, err
		}
	}
	return &v1.ObjectReference{
		Kind:            gvk.Kind,
		APIVersion:      gvk.GroupVersion().String(),
		Name:            m.GetName(),
		Namespace:       m.GetNamespace(),
		UID:             m.GetUID(),
		ResourceVersion: m.GetResourceVersion(),
	}, nil
}

func (c *kindCache) lookup(scheme *runtime.Scheme, obj runtime.Object) (schema.GroupVersionKind, error) {
	if scheme == nil {
		return schema.GroupVersionKind{}, errors.New("record: scheme is required to look up the kind of an object without TypeMeta")
	}
	k := kindKey{scheme, reflect.TypeOf(obj)}
	if v, ok := c.m.Load(k); ok {
		return v.(schema.GroupVersionKind), nil
	}
	gvks, _, err := scheme.ObjectKinds(obj)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	if len(gvks) == 0 || gvks[0].Empty() {
		return schema.GroupVersionKind{}, fmt.Errorf("record: unexpected kinds registered for %T: %v", obj, gvks)
	}
	c.m.Store(k, gvks[0])
	return gvks[0], nil
}
