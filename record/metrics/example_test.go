package metrics_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldk8s/herald/record"
	"github.com/heraldk8s/herald/record/metrics"
	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

// Register one collector per broadcaster; every scrape reads its Stats. A
// controller registers it in the registry its /metrics endpoint serves
// (prometheus.MustRegister for the default one).
func ExampleNewCollector() {
	broadcaster := record.NewBroadcaster(
		record.WithSinkOptions(sink.Options{Clock: clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), QPS: sink.Unlimited}), // a fake clock never refills the token bucket
	)
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(sinktest.New())
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "my-controller"})

	registry := prometheus.NewRegistry()
	registry.MustRegister(metrics.NewCollector(broadcaster, prometheus.Labels{"controller": "my-controller"}))

	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "settings"}}
	recorder.Event(cm, v1.EventTypeWarning, "InvalidSpec", `missing required key "mode"`)
	recorder.Event(cm, "Critical", "InvalidSpec", "not a valid event type") // dropped as invalid
	if err := broadcaster.Flush(context.Background()); err != nil {
		fmt.Println("flush:", err)
	}
	recorder.Event(cm, v1.EventTypeWarning, "InvalidSpec", `missing required key "mode"`)
	if err := broadcaster.Flush(context.Background()); err != nil {
		fmt.Println("flush:", err)
	}

	families, err := registry.Gather()
	if err != nil {
		fmt.Println("gather:", err)
	}
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			name, value := mf.GetName(), m.GetCounter().GetValue()
			switch {
			case name == "herald_events_recorded_total",
				name == "herald_events_written_total",
				name == "herald_events_dropped_total" && value > 0:
				fmt.Printf("%s{%s} %v\n", name, strings.Join(labels, ","), value)
			}
		}
	}
	// Output:
	// herald_events_dropped_total{controller=my-controller,reason=invalid} 1
	// herald_events_recorded_total{controller=my-controller} 3
	// herald_events_written_total{controller=my-controller,op=create} 1
	// herald_events_written_total{controller=my-controller,op=patch} 1
}
