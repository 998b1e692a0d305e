package events_test

import (
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	cgevents "k8s.io/client-go/tools/events"

	"github.com/heraldk8s/herald/events"
)

func TestGetFieldSelectorMatchesClientGo(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	for _, gv := range []schema.GroupVersion{{Group: "events.k8s.io", Version: "v1"}, {Group: "events.k8s.io", Version: "v1beta1"}, {Version: "v1"}, {Group: "x", Version: "v9"}} {
		for _, name := range []string{"", "d"} {
			h, herr := events.GetFieldSelector(gv, gvk, name, "uid")
			c, cerr := cgevents.GetFieldSelector(gv, gvk, name, "uid")
			if (herr == nil) != (cerr == nil) || (h == nil) != (c == nil) || (h != nil && terms(h.String()) != terms(c.String())) {
				t.Errorf("%v %q: herald %v %v, client-go %v %v", gv, name, h, herr, c, cerr)
			}
		}
	}
}

// terms sorts a selector's terms (client-go builds it from a map).
func terms(s string) string {
	t := strings.Split(s, ",")
	sort.Strings(t)
	return strings.Join(t, ",")
}
