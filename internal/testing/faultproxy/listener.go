package faultproxy

import (
	"errors"
	"net"
	"sync"
)

// darkMode says what happens to new connections while the proxy is dark.
type darkMode int

const (
	// light: connections are served normally.
	light darkMode = iota
	// darkRefuse: new connections are reset at once (like a refused
	// connection, without giving up the port).
	darkRefuse
	// darkHang: new connections are held unanswered until the proxy is light
	// again (like a black hole).
	darkHang
)

// trackingListener hands accepted TCP connections to the http.Server, keeps
// track of every open connection so they can all be reset at once, and
// refuses or holds new connections while dark.
//
// A goroutine (acceptLoop) owns the raw listener; it ends when the raw
// listener is closed by Close.
type trackingListener struct {
	raw  net.Listener
	done chan struct{} // closed when acceptLoop has returned

	mu      sync.Mutex
	mode    darkMode
	closed  bool
	queue   []net.Conn // accepted, waiting for Accept
	held    []net.Conn // accepted while darkHang, waiting for light
	conns   map[*trackedConn]struct{}
	refused int
	notify  chan struct{} // capacity 1: something changed for Accept
}

func newTrackingListener(raw net.Listener) *trackingListener {
	l := &trackingListener{
		raw:    raw,
		done:   make(chan struct{}),
		conns:  make(map[*trackedConn]struct{}),
		notify: make(chan struct{}, 1),
	}
	go l.acceptLoop()
	return l
}

func (l *trackingListener) acceptLoop() {
	defer close(l.done)
	for {
		c, err := l.raw.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		tc := &trackedConn{Conn: c, l: l}
		l.mu.Lock()
		switch {
		case l.closed:
			l.mu.Unlock()
			reset(c)
			continue
		case l.mode == darkRefuse:
			l.refused++
			l.mu.Unlock()
			reset(c)
			continue
		case l.mode == darkHang:
			l.conns[tc] = struct{}{}
			l.held = append(l.held, tc)
		default:
			l.conns[tc] = struct{}{}
			l.queue = append(l.queue, tc)
		}
		l.mu.Unlock()
		l.wake()
	}
}

func (l *trackingListener) wake() {
	select {
	case l.notify <- struct{}{}:
	default:
	}
}

// Accept implements net.Listener.
func (l *trackingListener) Accept() (net.Conn, error) {
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return nil, net.ErrClosed
		}
		if len(l.queue) > 0 {
			c := l.queue[0]
			l.queue = l.queue[1:]
			more := len(l.queue) > 0
			l.mu.Unlock()
			if more {
				l.wake()
			}
			return c, nil
		}
		l.mu.Unlock()
		<-l.notify
	}
}

// Close implements net.Listener: it stops accepting and resets every
// connection not yet handed out. Connections already handed out stay open
// (http.Server.Close closes them, resetAll resets them).
func (l *trackingListener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	pending := append(l.queue, l.held...)
	l.queue, l.held = nil, nil
	l.mu.Unlock()
	err := l.raw.Close()
	<-l.done
	for _, c := range pending {
		reset(c)
	}
	// Wake Accept; it sees closed. Accept is called by one goroutine only
	// (http.Server.Serve), so one token is enough.
	l.wake()
	return err
}

// Addr implements net.Listener.
func (l *trackingListener) Addr() net.Addr { return l.raw.Addr() }

// setMode changes what happens to new connections. Going dark resets every
// open connection when reset is true; going light releases held connections.
func (l *trackingListener) setMode(m darkMode, resetOpen bool) {
	l.mu.Lock()
	l.mode = m
	if m == light && len(l.held) > 0 {
		l.queue = append(l.queue, l.held...)
		l.held = nil
	}
	l.mu.Unlock()
	l.wake()
	if resetOpen {
		l.resetAll()
	}
}

// resetAll resets every open connection (including held ones).
func (l *trackingListener) resetAll() {
	l.mu.Lock()
	conns := make([]*trackedConn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		reset(c)
	}
}

func (l *trackingListener) refusedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

func (l *trackingListener) forget(c *trackedConn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}

// trackedConn removes itself from its listener's set when closed.
type trackedConn struct {
	net.Conn
	l    *trackingListener
	once sync.Once
}

// Close implements net.Conn.
func (c *trackedConn) Close() error {
	c.once.Do(func() { c.l.forget(c) })
	return c.Conn.Close()
}

// reset closes c with SO_LINGER 0 so that the peer sees a TCP RST
// ("connection reset by peer") rather than an orderly close.
func reset(c net.Conn) {
	raw := c
	if tc, ok := c.(*trackedConn); ok {
		raw = tc.Conn
	}
	if tcp, ok := raw.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = c.Close()
}
