package queuemaxpg_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/internal/pgtest"
	"github.com/queuemax/queuemax/queuemaxpg"
)

func TestOpen_DSNScheme(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{"", "mysql://localhost/db", "sqlite:///tmp/x", "localhost:5432"} {
		_, err := queuemaxpg.Open(t.Context(), dsn, queuemaxpg.Options{})
		var ce *queuemax.ConfigError
		if !errors.As(err, &ce) || ce.Field != "DSN" || !errors.Is(err, queuemax.ErrInvalidConfig) {
			t.Errorf("Open(DSN %q) = %v, want a *ConfigError naming DSN", dsn, err)
		}
	}
	// A PostgreSQL URL that cannot be reached fails in Open, naming it.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := queuemaxpg.Open(ctx, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2", queuemaxpg.Options{})
	if err == nil || !strings.Contains(err.Error(), "PostgreSQL") {
		t.Errorf("Open(unreachable) = %v, want a connection error", err)
	}
	// So does pgx's key=value form, the multi-host one of a failover setup
	// included (docs/postgres.md).
	_, err = queuemaxpg.Open(ctx, "host=127.0.0.1,127.0.0.1 port=1,2 user=nobody dbname=none sslmode=disable connect_timeout=2 target_session_attrs=read-write", queuemaxpg.Options{})
	if err == nil || !strings.Contains(err.Error(), "PostgreSQL") || errors.Is(err, queuemax.ErrInvalidConfig) {
		t.Errorf("Open(unreachable key=value DSN) = %v, want a connection error", err)
	}
}

func TestOpen_MaxConns(t *testing.T) {
	t.Parallel()
	for _, n := range []int{-1, 1, queuemaxpg.MinConns - 1} {
		_, err := queuemaxpg.Open(t.Context(), "postgres://nobody@127.0.0.1:1/none", queuemaxpg.Options{MaxConns: n})
		var ce *queuemax.ConfigError
		if !errors.As(err, &ce) || ce.Field != "MaxConns" {
			t.Errorf("Open(MaxConns %d) = %v, want a *ConfigError naming MaxConns", n, err)
		}
	}
}

// TestClient: the two-line change of the README: a client on the store
// runs a job, reports one logical shard and no data directory, and its
// Close closes the store; the default store's settings are refused beside
// a Store, and a failed Open closes the store it was given.
func TestClient(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	ctx := t.Context()
	st, err := queuemaxpg.Open(ctx, dsn, queuemaxpg.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan int, 1)
	h := queuemax.Define("t.Echo", queuemax.TaskOptions{}, func(_ context.Context, a struct{ N int }) error { ran <- a.N; return nil })
	c, err := queuemax.Open(ctx, queuemax.Config{Store: st, Handlers: []queuemax.Handler{h}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Shards() != 1 || c.Dir() != "" {
		t.Errorf("Shards() = %d, Dir() = %q; want 1 and no data directory", c.Shards(), c.Dir())
	}
	if _, err := c.Enqueue(ctx, "t.Echo", struct{ N int }{7}, queuemax.Opts{}); err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(rctx) }()
	select {
	case n := <-ran:
		if n != 7 {
			t.Errorf("ran with %d, want 7", n)
		}
	case <-time.After(time.Minute):
		t.Fatal("the job did not run within a minute")
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stats(ctx); !errors.Is(err, queuemax.ErrClosed) {
		t.Errorf("store after Client.Close: Stats error %v, want ErrClosed", err)
	}

	for _, cfg := range []queuemax.Config{{Dir: t.TempDir()}, {Shards: 2}, {ReadOnly: true}, {Durability: queuemax.DurabilityFull}} {
		st, err := queuemaxpg.Open(ctx, dsn, queuemaxpg.Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Store = st
		_, err = queuemax.Open(ctx, cfg)
		var ce *queuemax.ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "default SQLite store") {
			t.Errorf("Open(%+v) = %v, want a *ConfigError for a default-store field", cfg, err)
		}
		if _, err := st.Stats(ctx); !errors.Is(err, queuemax.ErrClosed) {
			t.Errorf("store after a failed Open: Stats error %v, want ErrClosed", err)
		}
	}
}

// TestOpen_ReadOnly: a read-only store refuses writes, and a client on it
// refuses Run.
func TestOpen_ReadOnly(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	ctx := t.Context()
	st, err := queuemaxpg.Open(ctx, dsn, queuemaxpg.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	ro, err := queuemaxpg.Open(ctx, dsn, queuemaxpg.Options{Schema: schema, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := queuemax.Open(ctx, queuemax.Config{Store: ro})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Enqueue(ctx, "t.A", struct{}{}, queuemax.Opts{AllowUnknownTask: true}); !errors.Is(err, queuemax.ErrReadOnly) {
		t.Errorf("Enqueue on a read-only store = %v, want ErrReadOnly", err)
	}
	if err := c.Run(ctx); !errors.Is(err, queuemax.ErrReadOnly) {
		t.Errorf("Run on a read-only store = %v, want ErrReadOnly", err)
	}
}
