package bench

import (
	"bytes"
	"flag"
	"io"
	"sync/atomic"

	"k8s.io/klog/v2"
)

// clientGoDropMessages are the error logs with which client-go's tools/record
// reports an event it gives up on (one log per event; client-go counts
// nothing). Herald counts its drops in Stats instead.
var clientGoDropMessages = [][]byte{
	[]byte("Unable to record event: too many queued events, dropped event"),
	[]byte("Unable to record event (will not retry!)"),
	[]byte("Server rejected event (will not retry!)"),
	[]byte("Unable to construct event (will not retry!)"),
	[]byte("Unable to write event (retry limit exceeded!)"),
	[]byte("Unable to write event (broadcaster is shut down)"),
}

// LogCounter counts the error logs klog writes while it is installed, and
// among them those by which client-go reports a dropped event. Install it
// with CaptureKlog.
type LogCounter struct {
	errors, drops atomic.Int64
	restore       func()
}

// Write implements io.Writer. klog writes one entry per call.
func (c *LogCounter) Write(p []byte) (int, error) {
	c.errors.Add(1)
	for _, m := range clientGoDropMessages {
		if bytes.Contains(p, m) {
			c.drops.Add(1)
			break
		}
	}
	return len(p), nil
}

// Errors returns how many error logs were written.
func (c *LogCounter) Errors() int64 { return c.errors.Load() }

// Drops returns how many of them report a dropped event (client-go's).
func (c *LogCounter) Drops() int64 { return c.drops.Load() }

// Reset sets both counts to zero.
func (c *LogCounter) Reset() { c.errors.Store(0); c.drops.Store(0) }

// Restore puts klog's output back as it was before CaptureKlog.
func (c *LogCounter) Restore() { c.restore() }

// CaptureKlog sends klog's global output (what klog.Background() loggers
// write, as client-go's recorder and a herald broadcaster without WithLogger
// do) to a LogCounter instead of stderr: error entries are still formatted
// in full, as they would be in a controller, then counted and discarded;
// other severities are discarded. Call Restore when done. It changes
// process-wide state: do not use it from parallel tests.
func CaptureKlog() *LogCounter {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	set := map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL", "one_output": "true"}
	old := map[string]string{}
	for name, v := range set {
		f := fs.Lookup(name)
		old[name] = f.Value.String()
		_ = f.Value.Set(v)
	}
	c := &LogCounter{}
	klog.SetOutput(io.Discard)
	klog.SetOutputBySeverity("ERROR", c)
	c.restore = func() {
		klog.Flush()
		for name, v := range old {
			_ = fs.Lookup(name).Value.Set(v)
		}
		klog.SetOutput(nil)
	}
	return c
}
