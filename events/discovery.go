package events

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// serverResourcesForGroupVersion asks discovery for the resources of
// groupVersion (a group's version: not the legacy "v1"), bounded by ctx.
//
// The request goes through the discovery client's REST client, with ctx and
// no retry of its own: the engine's RequestTimeout and Stop bound it as
// they bound a write, and a failure (a 503 with Retry-After included) is
// retried by the engine with its backoff, as a failed write. client-go's
// ServerResourcesForGroupVersion sends it with context.TODO() (v0.35 and
// v0.36, which herald also builds with: `make compat`), bounded only by the
// rest.Config's Timeout, none by default, and both it and v0.37's
// ServerResourcesForGroupVersionWithContext retry a Retry-After inside the
// call. A discovery client without a REST client (client-go's fake) is
// asked through those methods.
func serverResourcesForGroupVersion(ctx context.Context, d discovery.DiscoveryInterface, groupVersion string) (*metav1.APIResourceList, error) {
	if rc := d.RESTClient(); rc != nil {
		if r, ok := rc.(*rest.RESTClient); !ok || r != nil {
			out := &metav1.APIResourceList{GroupVersion: groupVersion}
			if err := rc.Get().AbsPath("/apis", groupVersion).MaxRetries(0).Do(ctx).Into(out); err != nil {
				return nil, err
			}
			return out, nil
		}
	}
	if dc, ok := d.(interface {
		ServerResourcesForGroupVersionWithContext(ctx context.Context, groupVersion string) (*metav1.APIResourceList, error)
	}); ok {
		return dc.ServerResourcesForGroupVersionWithContext(ctx, groupVersion)
	}
	return d.ServerResourcesForGroupVersion(groupVersion)
}
