package queuemax

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
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
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	record := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	wg.Go(func() {
		defer stop()
		if err := c.Run(ctx); err != nil {
			record(fmt.Errorf("queuemax: workers: %w", err))
		}
	})
	served := make(chan struct{})
	wg.Go(func() {
		defer close(served)
		defer stop()
		var err error
		if srv.TLSConfig != nil && (len(srv.TLSConfig.Certificates) > 0 || srv.TLSConfig.GetCertificate != nil) {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			record(fmt.Errorf("queuemax: http server: %w", err))
		}
	})
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.DrainTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		record(fmt.Errorf("queuemax: http shutdown: %w", err))
	}
	<-served
	wg.Wait()
	return firstErr
}
