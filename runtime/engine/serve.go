package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// The logic of the root package's queuemax.ServeListenerWithWorkers and
// Client.RunUntilSignal, which forward here with the client's Run and Stop.

// ServeWithWorkers serves srv on ln and runs run alongside it until ctx
// ends, then stops both at once, giving the server drain to shut down
// (see queuemax.ServeListenerWithWorkers).
func ServeWithWorkers(ctx context.Context, srv *http.Server, ln net.Listener, run func(context.Context) error, drain time.Duration) error {
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
		if err := run(ctx); err != nil {
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
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		record(fmt.Errorf("queuemax: http shutdown: %w", err))
	}
	<-served
	wg.Wait()
	return firstErr
}

// RunUntilSignal runs run until ctx ends or one of sigs arrives (SIGINT
// and SIGTERM when none are given); a second signal during the drain
// calls stop with a context already done (see queuemax.Client.RunUntilSignal).
func RunUntilSignal(ctx context.Context, sigs []os.Signal, run func(context.Context) error, stop func(context.Context) error,
	log *slog.Logger, drain time.Duration) error {
	if len(sigs) == 0 {
		sigs = []os.Signal{os.Interrupt, syscall.SIGTERM}
	}
	caught := make(chan os.Signal, 2)
	signal.Notify(caught, sigs...)
	defer signal.Stop(caught)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(runCtx) }()
	for {
		select {
		case err := <-done:
			return err
		case sig := <-caught:
			if runCtx.Err() == nil {
				log.Info("queuemax: signal received: draining; signal again to release running jobs and stop now",
					"signal", sig.String(), "drain_timeout", drain.String())
				cancel()
				continue
			}
			log.Warn("queuemax: second signal: releasing running jobs to pending (no attempt spent)", "signal", sig.String())
			now, abort := context.WithCancel(context.Background())
			abort()
			go stop(now) // ctx already done: end the drain at once
		}
	}
}
