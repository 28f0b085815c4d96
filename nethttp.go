package queuemax

import (
	"context"
	"fmt"
	"net"
	"net/http"

	"github.com/queuemax/queuemax/runtime/engine"
)

type clientKey struct{}

// NewContext returns a copy of ctx that carries c; FromContext gets it back.
func NewContext(ctx context.Context, c *Client) context.Context {
	return context.WithValue(ctx, clientKey{}, c)
}

// FromContext returns the Client that Middleware or NewContext put into
// ctx, and false if there is none. Handlers bind typed task handles to it
// with the generated New: tasks.New(c).SendEmail.Delay(ctx, …).
func FromContext(ctx context.Context) (*Client, bool) {
	c, ok := ctx.Value(clientKey{}).(*Client)
	return c, ok && c != nil
}

// Middleware returns net/http middleware that puts c into every request's
// context, for FromContext.
func Middleware(c *Client) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(NewContext(r.Context(), c)))
		})
	}
}

// ServeWithWorkers runs srv on srv.Addr (":http" if empty; TLS when
// srv.TLSConfig holds a certificate) and c.Run side by side, sharing one
// graceful shutdown. See ServeListenerWithWorkers.
func ServeWithWorkers(ctx context.Context, srv *http.Server, c *Client) error {
	addr := srv.Addr
	if addr == "" {
		addr = ":http"
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("queuemax: listen: %w", err)
	}
	return ServeListenerWithWorkers(ctx, srv, ln, c)
}

// ServeListenerWithWorkers serves srv on ln and runs c.Run alongside it
// until ctx ends. Then both stop at once: srv.Shutdown stops accepting
// connections and waits for in-flight requests, while Run stops claiming
// and drains running jobs. The server gets Config.DrainTimeout; then its
// remaining connections are closed. If either stops early with an error,
// the other is stopped too. It returns once both have stopped (it takes
// ownership of ln), with the first real error: nil after a shutdown caused
// by ctx, never http.ErrServerClosed.
func ServeListenerWithWorkers(ctx context.Context, srv *http.Server, ln net.Listener, c *Client) error {
	return engine.ServeWithWorkers(ctx, srv, ln, c.Run, c.cfg.DrainTimeout)
}
