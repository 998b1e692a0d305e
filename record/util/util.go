// Package util is client-go's tools/record/util: the helpers its recorders
// share, with the same meaning.
package util

import (
	"errors"
	"net/http"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/heraldk8s/herald/internal/eventname"
)

// ValidateEventType reports whether eventtype is Normal or Warning, the
// types the API server accepts.
func ValidateEventType(eventtype string) bool {
	return eventtype == v1.EventTypeNormal || eventtype == v1.EventTypeWarning
}

// IsKeyNotFoundError reports whether err is an API status error with code
// 404. Unlike client-go's it also finds one wrapped with %w.
func IsKeyNotFoundError(err error) bool {
	var se apierrors.APIStatus
	return errors.As(err, &se) && se.Status().Code == http.StatusNotFound
}

// GenerateEventName returns the name of an event about the object named
// refName at unixNano: "<refName>.<unixNano in hex>" as client-go makes it.
// When that is not a valid DNS-1123 subdomain, client-go returns a random
// UUID; herald returns a valid name derived from refName and unixNano
// (lower-cased, invalid characters replaced, cut to fit), so the name stays
// readable and deterministic.
func GenerateEventName(refName string, unixNano int64) string {
	return eventname.Name(refName, unixNano)
}
