package controller

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/heraldk8s/herald/record/recordtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func configMap(name string, data map[string]string) *v1.ConfigMap {
	return &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{ManagedLabel: "true"}},
		Data:       data,
	}
}

func TestReconcile(t *testing.T) {
	tests := []struct {
		name        string
		data        map[string]string
		wantType    string
		wantReason  string
		wantMessage string
	}{
		{"fast", map[string]string{"mode": "fast"}, v1.EventTypeNormal, ReasonSynced, `Synced with mode "fast"`},
		{"safe", map[string]string{"mode": "safe", "other": "x"}, v1.EventTypeNormal, ReasonSynced, `Synced with mode "safe"`},
		{"off", map[string]string{"mode": "off"}, v1.EventTypeNormal, ReasonSynced, `Synced with mode "off"`},
		{"missing", map[string]string{"speed": "fast"}, v1.EventTypeWarning, ReasonInvalidSpec, `missing required key "mode"`},
		{"nil data", nil, v1.EventTypeWarning, ReasonInvalidSpec, `missing required key "mode"`},
		{"unknown", map[string]string{"mode": "turbo"}, v1.EventTypeWarning, ReasonInvalidSpec, `mode "turbo" is not one of fast, safe, off`},
		{"case matters", map[string]string{"mode": "Fast"}, v1.EventTypeWarning, ReasonInvalidSpec, `mode "Fast" is not one of fast, safe, off`},
		{"empty", map[string]string{"mode": ""}, v1.EventTypeWarning, ReasonInvalidSpec, `mode "" is not one of fast, safe, off`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			cm := configMap("cm", tt.data)
			if err := indexer.Add(cm); err != nil {
				t.Fatal(err)
			}
			rec := recordtest.New()
			c := &controller{lister: corelisters.NewConfigMapLister(indexer), recorder: rec}

			for step := range 2 { // a resync repeats the event
				if err := c.reconcile(ctx, "ns/cm"); err != nil {
					t.Fatalf("step %d: reconcile: %v", step, err)
				}
			}
			evs := rec.Events()
			if len(evs) != 2 {
				t.Fatalf("recorded %d events, want 2: %v", len(evs), evs)
			}
			for i, ev := range evs {
				if ev.Type != tt.wantType || ev.Reason != tt.wantReason || ev.Message != tt.wantMessage || ev.Name != "cm" || ev.Namespace != "ns" {
					t.Errorf("event %d = %+v, want %s %s %q on ns/cm", i, ev, tt.wantType, tt.wantReason, tt.wantMessage)
				}
			}
		})
	}
}

func TestReconcileGoneOrBadKey(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	rec := recordtest.New()
	c := &controller{lister: corelisters.NewConfigMapLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})), recorder: rec}
	for _, key := range []string{"ns/deleted", "a/b/c"} {
		if err := c.reconcile(ctx, key); err != nil {
			t.Errorf("reconcile(%q) = %v, want nil (nothing to retry)", key, err)
		}
	}
	if evs := rec.Events(); len(evs) != 0 {
		t.Fatalf("recorded %v, want nothing", evs)
	}
}

// TestRunFlushesOnStop runs the whole controller against a fake clientset:
// it records events for the managed ConfigMaps only, and when its context
// ends it returns with every event written.
func TestRunFlushesOnStop(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	unmanaged := configMap("unmanaged", map[string]string{"mode": "turbo"})
	unmanaged.Labels = nil
	client := fake.NewClientset(
		configMap("good", map[string]string{"mode": "fast"}),
		configMap("bad", map[string]string{"mode": "turbo"}),
		unmanaged,
	)

	done := make(chan error, 1)
	var recorded, written, lost int64
	go func() {
		stats, err := Run(ctx, Config{Client: client, Namespace: "ns", Resync: time.Hour})
		recorded, written, lost = stats.Recorded, stats.Created+stats.Patched+stats.Coalesced, stats.Dropped.Total()+stats.Abandoned
		done <- err
	}()

	// Stop as soon as both managed ConfigMaps have been reconciled once.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		evs, err := client.CoreV1().Events("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs.Items) >= 2 {
			break
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("no events after 30s: %+v", evs.Items)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if recorded != 2 || written != 2 || lost != 0 {
		t.Fatalf("recorded %d, written %d, lost %d; want 2, 2, 0", recorded, written, lost)
	}

	evs, err := client.CoreV1().Events("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, ev := range evs.Items {
		if ev.Source.Component != Component || ev.InvolvedObject.Kind != "ConfigMap" {
			t.Errorf("event %s: source %q, object kind %q", ev.Name, ev.Source.Component, ev.InvolvedObject.Kind)
		}
		got[ev.InvolvedObject.Name] = ev.Reason
	}
	want := map[string]string{"good": ReasonSynced, "bad": ReasonInvalidSpec}
	if len(got) != len(want) || got["good"] != want["good"] || got["bad"] != want["bad"] {
		t.Fatalf("events by object %v, want %v", got, want)
	}
}

func TestRunNeedsClient(t *testing.T) {
	if _, err := Run(context.Background(), Config{}); err == nil {
		t.Fatal("Run without a client succeeded")
	}
}
