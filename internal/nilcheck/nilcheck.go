// Package nilcheck tells a nil value inside an interface (a typed nil
// pointer, map, func, chan or slice) from a usable one, so that a sink
// given as a typed nil is refused up front instead of panicking at its
// first write.
package nilcheck

import "reflect"

// IsNil reports whether v is nil or holds a nil pointer, map, func, chan,
// interface or slice.
func IsNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Interface, reflect.Slice:
		return rv.IsNil()
	}
	return false
}
