package pgfaults_test

import (
	"io"
	"net"
	"sync"
	"testing"
)

// proxy is a TCP proxy in front of a server that can freeze: while frozen
// it moves no byte in either direction and connects nothing, but keeps
// every connection open — a host cut off from the network, as the
// server and the client see it (no reset, no close: silence).
type proxy struct {
	ln       net.Listener
	upstream string

	mu     sync.Mutex
	frozen bool
	thaw   *sync.Cond
	conns  []net.Conn
}

func newProxy(t *testing.T, upstream string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, upstream: upstream}
	p.thaw = sync.NewCond(&p.mu)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's host:port.
func (p *proxy) Addr() string { return p.ln.Addr().String() }

// Freeze stops every byte; Heal lets them move again.
func (p *proxy) Freeze() { p.mu.Lock(); p.frozen = true; p.mu.Unlock() }

func (p *proxy) Heal() {
	p.mu.Lock()
	p.frozen = false
	p.thaw.Broadcast()
	p.mu.Unlock()
}

// wait blocks while the proxy is frozen.
func (p *proxy) wait() {
	p.mu.Lock()
	for p.frozen {
		p.thaw.Wait()
	}
	p.mu.Unlock()
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			p.wait()
			up, err := net.Dial("tcp", p.upstream)
			if err != nil {
				c.Close()
				return
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go p.pipe(up, c)
			p.pipe(c, up)
		}()
	}
}

// pipe copies from src to dst, holding each chunk while frozen.
func (p *proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		p.wait()
		n, err := src.Read(buf)
		if n > 0 {
			p.wait()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			return
		}
	}
}

func (p *proxy) close() {
	p.ln.Close()
	p.Heal()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}
