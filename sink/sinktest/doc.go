// Package sinktest helps test code that writes Events.
//
// [Sink] is an in-memory sink.EventSink that stores events by namespace and
// name the way the API server does (AlreadyExists, NotFound, strategic-merge
// patches) and can inject faults — errors, latency, hangs — per call with
// [Sink.SetFault]. [Run] is a conformance check for your own EventSink: it
// asserts the behaviour herald's delivery engine relies on, and herald runs
// it against both this fake and a real kube-apiserver.
package sinktest
