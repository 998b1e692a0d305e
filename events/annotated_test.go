package events_test

import (
	"reflect"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	cgevents "k8s.io/client-go/tools/events"

	"github.com/heraldk8s/herald/events"
)

// herald declares AnnotatedEventRecorder itself (client-go has it only from
// v0.37 on, see annotated.go). With a client-go whose recorders have
// AnnotatedEventf, they must implement herald's interface with the same
// signature, so that values pass between the two types; with an older
// client-go, none of its recorders may have a method of that name.
func TestAnnotatedEventRecorderMatchesClientGo(t *testing.T) {
	iface := reflect.TypeFor[events.AnnotatedEventRecorder]()
	want, _ := iface.MethodByName("AnnotatedEventf")
	b := cgevents.NewBroadcaster(&cgevents.EventSinkImpl{Interface: fake.NewClientset().EventsV1()})
	defer b.Shutdown()
	recorders := map[string]any{
		"FakeRecorder": cgevents.NewFakeRecorder(1),
		"recorder":     b.NewRecorder(scheme.Scheme, "example.com/ctl"),
	}
	var with, without []string
	for name, r := range recorders {
		m, ok := reflect.TypeOf(r).MethodByName("AnnotatedEventf")
		if !ok {
			without = append(without, name)
			continue
		}
		with = append(with, name)
		if !reflect.TypeOf(r).Implements(iface) {
			t.Errorf("client-go's %s has AnnotatedEventf%v, herald's interface wants %v", name, m.Type, want.Type)
		}
		if _, ok := r.(events.AnnotatedEventRecorder); !ok {
			t.Errorf("client-go's %s is not a herald AnnotatedEventRecorder", name)
		}
	}
	if len(with) > 0 && len(without) > 0 {
		t.Errorf("client-go's %v have AnnotatedEventf but %v do not", with, without)
	}
	t.Logf("client-go recorders with AnnotatedEventf: %v", with)
}
