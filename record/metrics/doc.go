// Package metrics exports a broadcaster's Stats as Prometheus metrics.
//
// Register one collector per broadcaster:
//
//	prometheus.MustRegister(metrics.NewCollector(broadcaster, nil))
//
// Every scrape reads one Stats snapshot. The metrics of the events:
//
//	herald_events_recorded_total      counter  Event/Eventf/AnnotatedEventf calls
//	herald_events_written_total       counter  successful writes, label op="create"|"patch"
//	herald_events_coalesced_total     counter  events carried by a later write of the same event
//	herald_events_filtered_total      counter  events skipped by the spam filter
//	herald_events_aggregated_total    counter  events folded into a "(combined from similar events)" event
//	herald_events_dropped_total       counter  events given up, label reason (see sink.Drops.ByReason)
//	herald_events_retries_total       counter  failed writes scheduled again
//	herald_events_abandoned_total     counter  events unwritten when Shutdown (or a stopped sink's grace period) gave up
//	herald_events_cache_evictions_total counter entries evicted from the correlators' caches
//	herald_events_queued              gauge    events in the broadcaster's queues
//	herald_events_pending             gauge    events waiting in the delivery engines
//	herald_events_in_flight           gauge    events in a write under way
//	herald_events_held_back           gauge    pending events held by the server's state or the write budget
//	herald_events_oldest_pending_seconds gauge age of the oldest event not yet written
//
// and of the delivery engines' view of the API server (see sink.Stats):
//
//	herald_server_probing             gauge    1 while a sink sees the server down and probes it
//	herald_server_shedding            gauge    1 while the server sheds load (429 with Retry-After)
//	herald_server_probes_total        counter  requests sent as probes
//	herald_write_rate                 gauge    the sinks' write budget in writes/s (+Inf: no limit)
//	herald_write_rate_cuts_total      counter  times a 429 or a queue seen in round trips cut a sink's write rate
//
// Optional constant labels (for instance the controller's name) tell the
// broadcasters of one process apart.
package metrics
