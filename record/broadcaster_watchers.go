// This file holds the plain watchers: StartEventWatcher, StartLogging and
// StartStructuredLogging, the eventWatcher each of them (and each sink) is
// served by, and handle, which runs a user's handler.

package record

import (
	"fmt"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/internal/watchext"
)

// eventWatcher is one watcher of the broadcaster and its goroutine.
type eventWatcher struct {
	w      watchext.Watcher
	handle func(*v1.Event)
	sink   *sinkPipeline // nil for plain handlers
	// done is closed when the goroutine has exited; for a sink, after the
	// sink has been retired.
	done chan struct{}
	// goid is the id of the goroutine, set when it starts; it lets Flush
	// and Shutdown called from a handler skip the handler's own watcher.
	goid atomic.Uint64

	// mu guards running (a plain handler is running) and giveUp (Shutdown
	// stopped waiting: handle nothing more).
	mu      sync.Mutex
	running bool
	giveUp  bool
}

// begin reports whether the handler may run for the next event, and marks it
// running if so.
func (ew *eventWatcher) begin() bool {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	ew.running = !ew.giveUp
	return ew.running
}

func (ew *eventWatcher) end() {
	ew.mu.Lock()
	ew.running = false
	ew.mu.Unlock()
}

// abandon makes the watcher's goroutine handle no more events and reports
// whether its handler is running now.
func (ew *eventWatcher) abandon() (running bool) {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	ew.giveUp = true
	return ew.running
}

func (eb *broadcaster) StartEventWatcher(eventHandler func(*v1.Event)) apiwatch.Interface {
	if eventHandler == nil {
		// Refused once, as a nil sink is: started, it would panic (and
		// log) once per event.
		eb.logger.Error(nil, "Unable to start an event watcher with a nil handler; events are not handled by it")
		return apiwatch.NewEmptyWatch()
	}
	return eb.startWatcher(eventHandler, nil)
}

func (eb *broadcaster) StartLogging(logf func(format string, args ...interface{})) apiwatch.Interface {
	if logf == nil {
		eb.logger.Error(nil, "Unable to start logging events to a nil function; events are not logged by it")
		return apiwatch.NewEmptyWatch()
	}
	return eb.StartEventWatcher(func(e *v1.Event) {
		logf("Event(%#v): type: '%v' reason: '%v' %v", e.InvolvedObject, e.Type, e.Reason, e.Message)
	})
}

func (eb *broadcaster) StartStructuredLogging(verbosity klog.Level) apiwatch.Interface {
	loggerV := eb.logger.V(int(verbosity))
	return eb.StartEventWatcher(func(e *v1.Event) {
		loggerV.Info("Event occurred", "object", klog.KRef(e.InvolvedObject.Namespace, e.InvolvedObject.Name),
			"fieldPath", e.InvolvedObject.FieldPath, "kind", e.InvolvedObject.Kind, "apiVersion", e.InvolvedObject.APIVersion,
			"type", e.Type, "reason", e.Reason, "message", e.Message)
	})
}

// handle runs a user's handler; a panic in it is logged, not fatal to the
// watcher.
func (eb *broadcaster) handle(h func(*v1.Event), ev *v1.Event) {
	defer func() {
		if r := recover(); r != nil {
			eb.logger.Error(fmt.Errorf("panic: %v", r), "Event handler panicked", "event", klog.KObj(ev))
		}
	}()
	h(ev)
}
