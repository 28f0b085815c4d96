package pgfaults_test

import (
	"net"
	"sync"
	"testing"
	"time"
)

// lagProxy is a TCP proxy that delivers every byte delay after it
// arrived, in order: a replication link that runs behind. Cut ends every
// connection at once and drops what is still on its way, as a dying
// host's last WAL never reaches its standby.
type lagProxy struct {
	ln       net.Listener
	upstream string
	delay    time.Duration

	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func newLagProxy(t *testing.T, upstream string, delay time.Duration) *lagProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &lagProxy{ln: ln, upstream: upstream, delay: delay}
	go p.accept()
	t.Cleanup(p.Cut)
	return p
}

// Port is the proxy's port.
func (p *lagProxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *lagProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.upstream)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			up.Close()
			return
		}
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go p.pipe(up, c)
		go p.pipe(c, up)
	}
}

type chunk struct {
	due time.Time
	b   []byte
}

// pipe copies src to dst, each chunk delay after it was read.
func (p *lagProxy) pipe(dst, src net.Conn) {
	q := make(chan chunk, 1<<16)
	go func() {
		defer dst.Close()
		for c := range q {
			time.Sleep(time.Until(c.due)) // the link's latency, not synchronisation
			if _, err := dst.Write(c.b); err != nil {
				return
			}
		}
	}()
	defer close(q)
	for {
		buf := make([]byte, 32<<10)
		n, err := src.Read(buf)
		if n > 0 {
			q <- chunk{time.Now().Add(p.delay), buf[:n]}
		}
		if err != nil {
			return
		}
	}
}

// Cut closes the proxy and every connection through it, dropping the
// bytes not yet delivered.
func (p *lagProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
