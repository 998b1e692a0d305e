package sinktest_test

import (
	"testing"

	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/sink/sinktest"
)

func TestFakeSinkConforms(t *testing.T) {
	sinktest.Run(t, func(*testing.T) (sink.EventSink, string) { return sinktest.New(), "ns" })
}
