package sink_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heraldk8s/herald/sink"
)

// A Flush whose context ends leaves nothing behind.
func TestFlushCancelForgetsItsWait(t *testing.T) {
	h, _ := downHarness(t, sink.Options{BaseDelay: time.Hour, MaxDelay: time.Hour})
	for i := range 100 {
		h.eng.Add(fmt.Sprint("k", i), event(fmt.Sprint("e", i), 1), nil)
	}
	h.waitDown()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 1000 {
		if err := h.eng.Flush(ctx); err == nil {
			t.Fatal("Flush with a cancelled context returned nil")
		}
	}
	if n := sink.WaitersForTest(h.eng); n != 0 {
		t.Fatalf("%d waiters left behind by cancelled Flushes", n)
	}
}
