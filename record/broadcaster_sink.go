// This file holds the sink pipeline: StartRecordingToSink, the sinkPipeline
// it builds (a correlator feeding a delivery engine), the watch it returns,
// and toSink, which correlates each event and hands it to the engine.

package record

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/heraldk8s/herald/correlator"
	"github.com/heraldk8s/herald/internal/hook"
	"github.com/heraldk8s/herald/internal/watchext"
	"github.com/heraldk8s/herald/sink"
	"github.com/heraldk8s/herald/watch"
)

// sinkPipeline is what StartRecordingToSink builds: a correlator feeding a
// delivery engine.
//
// Every event taken from w's channel is counted in received, then, unless
// Shutdown gave up on the sink, correlated and handed to the engine. Once
// Shutdown has given up (abandon), the events still in the channel, and the
// one being correlated then, are counted in lost (abandoned) instead, so
// that when Shutdown returns no event of the sink is left in no bucket.
type sinkPipeline struct {
	corr     hook.Correlator
	engine   *sink.Engine
	w        watchext.Watcher
	received atomic.Int64 // events taken from w's channel
	lost     atomic.Int64 // events taken from w's channel after Shutdown gave up: abandoned
	// filtered counts the events the correlator's spam filter skipped and
	// toSink accounted (its Filtered). Not the correlator's own count: an
	// event Shutdown counted as lost while the correlator still held it is
	// one the correlator may count as filtered too, and one bucket must
	// keep it without the other going down.
	filtered atomic.Int64
	retiring atomic.Bool // its channel is closed and drained: it is flushing and stopping
	stopMu   sync.Mutex  // serialises stop: a second call returns once the engine has stopped

	// mu guards correlating, giveUp and takenOver: the hand-over of an
	// event between serve and a Shutdown that gives up.
	mu          sync.Mutex
	correlating bool // serve holds an event it has not handed to the engine yet
	giveUp      bool // Shutdown stopped waiting: nothing more goes to the engine
	// takenOver is set when Shutdown gave up while serve was correlating
	// (perhaps stuck in a user's key function): Shutdown counted that
	// event as lost and drains the channel itself; serve reads nothing
	// more from it and waits for drained before it retires the sink.
	takenOver bool
	drained   chan struct{}
}

// begin reports whether serve may correlate the event it has just taken,
// and marks it correlating if so. After Shutdown gave up it reports false:
// the caller counts the event as lost.
func (p *sinkPipeline) begin() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.correlating = !p.giveUp
	return p.correlating
}

// abandon is Shutdown giving up on the sink: nothing more goes to its
// engine. It reports whether Shutdown must drain the channel itself (serve
// was correlating an event: that event is counted as lost here, and serve
// reads no more).
func (p *sinkPipeline) abandon() (takeOver bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.giveUp {
		return false
	}
	p.giveUp = true
	if p.correlating {
		p.takenOver = true
		p.drained = make(chan struct{})
		p.lost.Add(1)
	}
	return p.takenOver
}

// drain is Shutdown emptying the channel of a sink it took over from serve
// (see abandon): the events left are counted as lost, the flush marks are
// passed on. The channel is closed by then (the broadcaster has shut down,
// or the watch was stopped).
func (p *sinkPipeline) drain(ew *eventWatcher) {
	for wev := range ew.w.ResultChan() {
		switch obj := wev.Object.(type) {
		case *v1.Event:
			p.received.Add(1)
			p.lost.Add(1)
		case *flushMark:
			obj.reached(ew)
		}
	}
	close(p.drained)
}

// stop stops the engine. Unlike Engine.Stop, a call made while another is
// under way returns only once the engine has stopped, so the caller can read
// final counters.
func (p *sinkPipeline) stop(ctx context.Context) {
	p.stopMu.Lock()
	defer p.stopMu.Unlock()
	p.engine.Stop(ctx)
}

func (eb *broadcaster) StartRecordingToSink(s EventSink) apiwatch.Interface {
	if s == nil {
		eb.logger.Error(nil, "Unable to start recording to a nil event sink; events are not written anywhere by it")
		return apiwatch.NewEmptyWatch()
	}
	if eb.stopping.Load() {
		eb.logger.Error(watch.ErrShutdown, "Unable to start recording to sink (will not retry!)")
		return apiwatch.NewEmptyWatch()
	}
	p := &sinkPipeline{corr: eb.newCorrelator()}
	opts := hook.SetKeyInterval(eb.cfg.engine, eb.cfg.keyInterval).(sink.Options)
	userOnWritten := opts.OnWritten
	opts.OnWritten = func(key string, sent, stored *v1.Event) {
		p.corr.UpdateStateForWrite(key, sent.Name, stored)
		if userOnWritten != nil {
			userOnWritten(key, sent, stored)
		}
	}
	engine, err := sink.NewEngine(s, opts)
	if err != nil {
		eb.logger.Error(err, "Unable to start recording to sink")
		return apiwatch.NewEmptyWatch()
	}
	p.engine = engine
	return eb.startWatcher(nil, p)
}

// sinkWatch is the watch StartRecordingToSink returns. Its Stop first lets
// the loop hand the sink every event recorded before the call (they may
// still wait in the incoming queue, and a stopped watcher is offered
// nothing more), for the shutdown grace period at most, then stops the
// watcher: the sink writes what it got as it retires. It never waits for a
// write, only for the loop to pass what is queued.
type sinkWatch struct {
	watchext.Watcher
	eb   *broadcaster
	once sync.Once
}

func (s *sinkWatch) Stop() {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(s.eb.ctx, s.eb.cfg.gracePeriod)
		defer cancel()
		mark := &flushMark{passed: make(chan struct{})} // no slots: a marker only
		if watchFuncs.Mark(s.eb.b, ctx, mark) == nil {
			select {
			case <-mark.passed:
			case <-ctx.Done():
			}
		}
		s.Watcher.Stop()
	})
}

// release stops the engine of a sink that was never started (it has no
// goroutine yet; Stop marks it stopped). p may be nil.
func (eb *broadcaster) release(p *sinkPipeline) {
	if p != nil {
		p.stop(eb.ctx)
	}
}

// toSink correlates ev and hands it to the sink's engine. An event the
// correlator fails on (the only failures are panics in the user's key and
// message functions) is a counted correlator_panicked drop. It is called
// after p.begin and ends the correlation; it reports false when Shutdown
// took the sink's channel over meanwhile (see sinkPipeline.abandon): the
// event was counted as lost then, and nothing of it is counted here.
func (eb *broadcaster) toSink(p *sinkPipeline, ev *v1.Event) bool {
	res, err := correlate(p.corr, ev)
	if err == nil && (res == nil || (!res.Skip && res.Event == nil)) {
		err = errors.New("record: correlator returned no event")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.correlating = false
	if p.takenOver {
		return false // counted as lost by abandon, filtered or not
	}
	if err != nil {
		n := eb.c.dropped[slotCorrelatorPanicked].Add(1)
		msg := "Unable to correlate event, dropping it"
		if eb.drops.Allow(slotCorrelatorPanicked, eb.cfg.clock.Now()) {
			eb.logger.Error(err, msg, "event", klog.KObj(ev), "dropReason", slotLabels[slotCorrelatorPanicked], "droppedForReason", n)
		} else if v := eb.logger.V(4); v.Enabled() {
			v.Info(msg, "event", klog.KObj(ev), "dropReason", slotLabels[slotCorrelatorPanicked], "droppedForReason", n, "err", err)
		}
		return true
	}
	if res.Skip {
		p.filtered.Add(1)
		return true
	}
	key := res.Key
	if key == "" {
		key = res.Event.Namespace + "/" + res.Event.Name
	}
	// Under p.mu, so that a Shutdown giving up meanwhile finds the event
	// either in the engine or still correlating. Add never blocks.
	p.engine.Add(key, res.Event, res.Patch)
	return true
}

// correlate is c.EventCorrelate with a panic (from a user's key or message
// function) turned into an error.
func correlate(c hook.Correlator, ev *v1.Event) (res *correlator.EventCorrelateResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("record: correlator panicked: %v", r)
		}
	}()
	return c.EventCorrelate(ev)
}
