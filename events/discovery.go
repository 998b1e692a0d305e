package events

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
)

// serverResourcesForGroupVersion asks discovery for the resources of
// groupVersion, cancelled with ctx where client-go allows it.
//
// The discovery client has ServerResourcesForGroupVersionWithContext from
// client-go v0.37 on; herald also builds with client-go v0.35 and v0.36 (its
// compatibility range, `make compat`), whose discovery client has only
// ServerResourcesForGroupVersion, without a context: there the request is
// bounded by the rest.Config's Timeout alone, as client-go's own
// EventBroadcasterAdapter's is. The method is looked up on the value, so the
// newer one is used whenever the client-go in the build has it.
func serverResourcesForGroupVersion(ctx context.Context, d discovery.DiscoveryInterface, groupVersion string) (*metav1.APIResourceList, error) {
	if dc, ok := d.(interface {
		ServerResourcesForGroupVersionWithContext(ctx context.Context, groupVersion string) (*metav1.APIResourceList, error)
	}); ok {
		return dc.ServerResourcesForGroupVersionWithContext(ctx, groupVersion)
	}
	return d.ServerResourcesForGroupVersion(groupVersion)
}
