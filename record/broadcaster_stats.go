// This file holds the broadcaster's Stats: its own counters plus the sums
// over its sinks, live and retired. The Stats type is in stats.go.

package record

func (eb *broadcaster) Stats() Stats {
	s := Stats{Recorded: eb.c.recorded.Load()}
	s.Dropped.Invalid = eb.c.dropped[slotInvalid].Load()
	s.Dropped.QueueFull = eb.c.dropped[slotQueueFull].Load()
	s.Dropped.AfterShutdown = eb.c.dropped[slotAfterShutdown].Load()
	s.Dropped.CorrelatorPanicked = eb.c.dropped[slotCorrelatorPanicked].Load()
	bs := eb.b.Stats()
	s.Broadcast = int64(bs.Distributed)
	s.Queued = int64(bs.Queued)
	eb.mu.Lock()
	defer eb.mu.Unlock()
	s.addSinkTotals(eb.retired)
	for _, p := range eb.sinks {
		s.addSink(p)
	}
	return s
}

// addSink adds the counters of one sink to s.
func (s *Stats) addSink(p *sinkPipeline) {
	es := p.engine.Stats()
	cs := p.corr.Stats()
	var t Stats
	t.Filtered = p.filtered.Load()
	t.Aggregated = int64(cs.Aggregated)
	t.CacheEvictions = int64(cs.AggregateEvictions + cs.ObserveEvictions + cs.SpamEvictions)
	t.Coalesced = es.Coalesced
	t.Created = es.Created
	t.Patched = es.Patched
	t.Retried = es.Retried
	t.Abandoned = es.Abandoned + p.lost.Load()
	t.Pending = es.Pending
	t.InFlight = es.InFlight
	t.Dropped = es.Dropped
	t.Probes = es.Probes
	t.RateCuts = es.RateCuts
	// Gauges: live sinks only (addSinkTotals also folds retired sinks).
	s.Server = max(s.Server, es.Server)
	s.WriteRate += es.WriteRate
	s.HeldBack += es.HeldBack
	s.OldestPending = max(s.OldestPending, es.OldestPending)
	if p.w != nil {
		offered, dropped := int64(p.w.Offered()), int64(p.w.Dropped())
		t.Offered = offered
		t.Dropped.WatcherFull = dropped
		t.Queued = max(offered-dropped-p.received.Load(), 0)
	}
	s.addSinkTotals(t)
}

// addSinkTotals adds the sink-side fields of t to s.
func (s *Stats) addSinkTotals(t Stats) {
	s.Offered += t.Offered
	s.Filtered += t.Filtered
	s.Aggregated += t.Aggregated
	s.CacheEvictions += t.CacheEvictions
	s.Coalesced += t.Coalesced
	s.Created += t.Created
	s.Patched += t.Patched
	s.Retried += t.Retried
	s.Abandoned += t.Abandoned
	s.Pending += t.Pending
	s.InFlight += t.InFlight
	s.Queued += t.Queued
	s.Dropped.Add(t.Dropped)
	s.Probes += t.Probes
	s.RateCuts += t.RateCuts
}
