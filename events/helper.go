package events

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	cgevents "k8s.io/client-go/tools/events"
)

// GetFieldSelector is client-go's: the field selector of the events about
// one object, for the events API version eventsGroupVersion
// (events.k8s.io/v1 or v1beta1: regarding.*; core v1: involvedObject.*).
func GetFieldSelector(eventsGroupVersion schema.GroupVersion, regardingGroupVersionKind schema.GroupVersionKind, regardingName string, regardingUID types.UID) (fields.Selector, error) {
	return cgevents.GetFieldSelector(eventsGroupVersion, regardingGroupVersionKind, regardingName, regardingUID)
}
