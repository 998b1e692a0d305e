package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldk8s/herald/internal/testing/bench/server"
)

// eventsAPI is a loopback HTTP server that speaks the part of the core/v1
// Events API that recorders use (POST an event, PATCH its count, message
// and lastTimestamp), with a capacity and an outage, and counts what it is
// asked:
//
//   - from its start until downUntil, every request is answered 503 with a
//     Status body (an API server that is not ready);
//   - after that it serves requests through model (model.go): each request
//     reaches it latency() after it was sent (the network's latency, fixed
//     or jittered), and its answer leaves when the model says (after a wait
//     in its queue, or its service time); the requests the model does not
//     admit are answered 429 TooManyRequests with the model's Retry-After,
//     as API Priority and Fairness does when it sheds load.
type eventsAPI struct {
	start     time.Time
	downUntil time.Time
	model     server.API // under mu
	latency   func() time.Duration

	mu          sync.Mutex
	events      map[string]*v1.Event // namespace/name
	perSecond   map[int]int          // requests by second since start, as they arrive
	okPerSecond map[int]int          // of those, the ones the model admitted
	// arrivals are the requests that reached the model, in order, and
	// whether it admitted each: the peak is taken over any one second.
	arrivals []arrival
	requests int
	down     int // requests answered during the outage
	tooMany  int
	writes   int // requests that stored something
	// early counts the writes of each client (by user agent, up to its
	// first space) that arrived in the first earlyFor after the outage:
	// the fleet's share while every controller has a backlog.
	early map[string]int
	// stored is called with each newly stored event (under mu).
	stored func(ev *v1.Event, at time.Time)
}

// newEventsAPI returns a server down from start for outage, then serving
// through model; latency (nil: none) is each request's network latency.
func newEventsAPI(start time.Time, outage time.Duration, model server.API, latency func() time.Duration) *eventsAPI {
	if latency == nil {
		latency = func() time.Duration { return 0 }
	}
	return &eventsAPI{
		start: start, downUntil: start.Add(outage), model: model, latency: latency,
		events: map[string]*v1.Event{}, perSecond: map[int]int{}, okPerSecond: map[int]int{}, early: map[string]int{},
	}
}

type arrival struct {
	at time.Time
	ok bool
}

// slidingPeak returns the most requests that reached the model within any
// one second, that count over the capacity (the larger at either end of
// that second), and of them the share it admitted over the same capacity.
func slidingPeak(arr []arrival, capacityAt func(time.Time) float64) (count int, peak, admitted float64) {
	j, ok := 0, 0
	for i, a := range arr {
		if a.ok {
			ok++
		}
		for !arr[j].at.After(a.at.Add(-time.Second)) {
			if arr[j].ok {
				ok--
			}
			j++
		}
		c := max(capacityAt(arr[j].at), capacityAt(a.at))
		if r := float64(i-j+1) / c; r > peak {
			count, peak, admitted = i-j+1, r, float64(ok)/c
		}
	}
	return count, peak, admitted
}

// earlyFor is how long after the outage eventsAPI.early counts.
const earlyFor = 5 * time.Second

func status(w http.ResponseWriter, code int, reason, msg string, retryAfter int) {
	w.Header().Set("Content-Type", "application/json")
	details := ""
	if retryAfter > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(retryAfter))
		details = fmt.Sprintf(`,"details":{"retryAfterSeconds":%d}`, retryAfter)
	}
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":%q,"reason":%q,"code":%d%s}`, msg, reason, code, details)
}

func (s *eventsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if d := s.latency(); d > 0 {
		time.Sleep(d)
	}
	s.mu.Lock()
	now := time.Now()
	s.requests++
	sec := int(now.Sub(s.start) / time.Second)
	s.perSecond[sec]++
	if now.Before(s.downUntil) {
		s.down++
		s.mu.Unlock()
		status(w, http.StatusServiceUnavailable, "ServiceUnavailable", "the server is not ready", 0)
		return
	}
	a := s.model.Serve(now)
	s.arrivals = append(s.arrivals, arrival{now, a.OK})
	s.mu.Unlock()
	if d := time.Until(a.Leaves); d > 0 {
		time.Sleep(d)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !a.OK {
		s.tooMany++
		status(w, http.StatusTooManyRequests, "TooManyRequests", "too many requests, please try again later", int(math.Ceil(a.RetryAfter.Seconds())))
		return
	}
	s.okPerSecond[sec]++
	if now.Sub(s.downUntil) < earlyFor {
		ua, _, _ := strings.Cut(r.UserAgent(), " ")
		s.early[ua]++
	}
	now = time.Now()
	// /api/v1/namespaces/{ns}/events[/{name}]
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) < 5 || parts[0] != "api" || parts[2] != "namespaces" || parts[4] != "events" {
		status(w, http.StatusNotFound, "NotFound", "no such path "+r.URL.Path, 0)
		return
	}
	ns := parts[3]
	switch {
	case r.Method == http.MethodPost && len(parts) == 5:
		ev := &v1.Event{}
		if err := json.Unmarshal(body, ev); err != nil {
			status(w, http.StatusBadRequest, "BadRequest", err.Error(), 0)
			return
		}
		key := ns + "/" + ev.Name
		if _, ok := s.events[key]; ok {
			status(w, http.StatusConflict, "AlreadyExists", "events "+ev.Name+" already exists", 0)
			return
		}
		ev.Namespace = ns
		ev.ResourceVersion = fmt.Sprint(s.requests)
		s.events[key] = ev
		s.writes++
		if s.stored != nil {
			s.stored(ev, now)
		}
		reply(w, http.StatusCreated, ev)
	case r.Method == http.MethodPatch && len(parts) == 6:
		ev, ok := s.events[ns+"/"+parts[5]]
		if !ok {
			status(w, http.StatusNotFound, "NotFound", "events "+parts[5]+" not found", 0)
			return
		}
		var p struct {
			Count         *int32       `json:"count"`
			Message       *string      `json:"message"`
			LastTimestamp *metav1.Time `json:"lastTimestamp"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			status(w, http.StatusBadRequest, "BadRequest", err.Error(), 0)
			return
		}
		if p.Count != nil {
			ev.Count = *p.Count
		}
		if p.Message != nil {
			ev.Message = *p.Message
		}
		if p.LastTimestamp != nil {
			ev.LastTimestamp = *p.LastTimestamp
		}
		ev.ResourceVersion = fmt.Sprint(s.requests)
		s.writes++
		reply(w, http.StatusOK, ev)
	default:
		status(w, http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method+" "+r.URL.Path, 0)
	}
}

func reply(w http.ResponseWriter, code int, ev *v1.Event) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(ev)
}

// The peak is read over any one second, not over whole seconds from an
// origin: 100 requests just before a second's end and 100 just after it
// are 200 within one second (whole seconds would read 100 and 100); the
// capacity is the larger at either end of that second.
func TestSlidingPeak(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var arr []arrival
	for i := range 100 {
		arr = append(arr, arrival{at: base.Add(900*time.Millisecond + time.Duration(i)*time.Millisecond), ok: true})
	}
	for i := range 100 {
		arr = append(arr, arrival{at: base.Add(1100*time.Millisecond + time.Duration(i)*time.Millisecond), ok: i < 40})
	}
	arr = append(arr, arrival{at: base.Add(3 * time.Second), ok: true})
	capacity := func(at time.Time) float64 {
		if at.Before(base.Add(time.Second)) {
			return 150
		}
		return 200
	}
	n, peak, admitted := slidingPeak(arr, capacity)
	if n != 200 || peak != 1 || admitted != 0.7 {
		t.Errorf("slidingPeak = %d, %v, %v; want 200 requests, 1x the larger capacity (200), 0.7x admitted", n, peak, admitted)
	}
}
