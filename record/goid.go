package record

import (
	"bytes"
	"runtime"
	"strconv"
)

// goid returns the id of the calling goroutine, or 0 if it cannot be read.
// Flush and Shutdown use it to recognise a call from a watcher's own
// handler, which must not wait for that watcher. It is not on any hot path.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b, ok := bytes.CutPrefix(b, []byte("goroutine "))
	if !ok {
		return 0
	}
	i := bytes.IndexByte(b, ' ')
	if i < 0 {
		return 0
	}
	n, err := strconv.ParseUint(string(b[:i]), 10, 64)
	if err != nil {
		return 0
	}
	return n
}
