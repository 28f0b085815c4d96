package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/queuemax/queuemax/internal/pgtest"
	"github.com/queuemax/queuemax/runtime/store"
)

// A read-only server's refusals (a standby, a demoted or fenced primary)
// reset the pools and are retried, as lost connections are: the
// statement never wrote anything.
func TestReadOnlyServerIsRetried(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"read-only transaction", &pgconn.PgError{Code: "25006", Message: "cannot execute INSERT in a read-only transaction"}, true},
		{"during recovery", fmt.Errorf("queuemax: insert jobs: %w", &pgconn.PgError{Code: "25006", Message: "cannot execute NOTIFY during recovery"}), true},
		{"recovery in progress", &pgconn.PgError{Code: "55000", Message: "recovery is in progress"}, true},
		{"conflict with recovery", &pgconn.PgError{Code: "40001", Message: "canceling statement due to conflict with recovery"}, true},
		{"other 55000", &pgconn.PgError{Code: "55000", Message: "lock not available"}, false},
		{"serialization failure", &pgconn.PgError{Code: "40001", Message: "could not serialize access due to concurrent update"}, false},
		{"not sent: no server", &notSent{&pgconn.ConnectError{}}, true},
	} {
		if got := connLost(c.err); got != c.want {
			t.Errorf("%s: connLost = %v, want %v", c.name, got, c.want)
		}
		if got := notRun(c.err); got != c.want {
			t.Errorf("%s: notRun = %v, want %v", c.name, got, c.want)
		}
	}
	for _, err := range []error{&notSent{context.DeadlineExceeded}, &notSent{fmt.Errorf("acquire: %w", context.Canceled)}} {
		if connLost(err) {
			t.Errorf("%v: a caller that gave up waiting for a connection is not a lost connection", err)
		}
	}
}

// An enqueue whose context ends before its statement is sent (here: the
// pool's only connection is held by someone else) returns the context's
// error, never ErrCommitUnknown, on each path: a single job (group
// commit, leading or waiting in the queue), a small batch, a COPY batch.
// Nothing is stored, and the store works once the connection is free.
func TestInsertNotSentReturnsContextError(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	st, err := Open(t.Context(), Options{DSN: dsn, Schema: pgtest.Schema(t, dsn), MaxConns: MinConns})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	held, err := st.pool.Acquire(t.Context()) // the main pool's only connection
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release := func() { once.Do(held.Release) }
	// Should an insert wait past its context (the bug), it gets the
	// connection after 8 s and the test fails instead of hanging.
	defer time.AfterFunc(8*time.Second, release).Stop()
	jobs := func(n int) []store.InsertParams {
		ps := make([]store.InsertParams, n)
		for i := range ps {
			ps[i] = store.InsertParams{Task: "t", Payload: json.RawMessage(`{}`), MaxAttempts: 1}
		}
		return ps
	}
	var wg sync.WaitGroup
	for _, c := range []struct {
		name string
		n    int
		wait time.Duration
	}{{"single, leading", 1, 300 * time.Millisecond}, {"single, queued", 1, 600 * time.Millisecond},
		{"single, queued longer", 1, 900 * time.Millisecond}, {"batch", 5, 300 * time.Millisecond}, {"COPY batch", 100, 300 * time.Millisecond}} {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), c.wait)
			defer cancel()
			start := time.Now()
			_, err := st.Insert(ctx, jobs(c.n))
			switch {
			case errors.Is(err, ErrCommitUnknown):
				t.Errorf("%s: %v, want the context's error: the insert was never sent", c.name, err)
			case !errors.Is(err, context.DeadlineExceeded):
				t.Errorf("%s: %v, want context.DeadlineExceeded", c.name, err)
			}
			if d := time.Since(start); d > c.wait+4*time.Second {
				t.Errorf("%s: returned %v after its context ended", c.name, d-c.wait)
			}
		})
	}
	wg.Wait()
	release()
	var stored int
	if err := st.pool.QueryRow(t.Context(), st.sql(`SELECT count(*) FROM {s}.jobs`)).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != 0 {
		t.Errorf("%d jobs stored by enqueues that returned an error before sending", stored)
	}
	if _, err := st.Insert(t.Context(), jobs(1)); err != nil {
		t.Errorf("insert once the connection is free: %v", err)
	}
}

// A server that turns read-only (a primary fenced or demoted) refuses
// the store's writes with 25006; the store never reports that as the
// enqueue's failure: it resets its pools and retries until a writable
// server answers (here the same one, made writable again).
func TestInsertRetriesReadOnlyServer(t *testing.T) {
	t.Parallel()
	cl := pgtest.NewCluster(t)
	st, err := Open(t.Context(), Options{DSN: cl.DSN, Schema: "qm_ro", MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cl.Exec(`ALTER SYSTEM SET default_transaction_read_only = on`)
	cl.Exec(`SELECT pg_reload_conf()`)
	pgtest.WaitReadOnly(t, cl.DSN, true)
	resets := st.ConnResets()
	done := make(chan error, 2)
	for _, n := range []int{1, 100} {
		go func() {
			ps := make([]store.InsertParams, n)
			for i := range ps {
				ps[i] = store.InsertParams{Task: "t", Payload: json.RawMessage(`{}`), MaxAttempts: 1}
			}
			_, err := st.Insert(t.Context(), ps)
			done <- err
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for st.ConnResets() == resets {
		if time.Now().After(deadline) {
			t.Fatal("no pool reset after the server turned read-only")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("an enqueue returned while the server was read-only: %v", err)
	default:
	}
	pgtest.ExecReadWrite(t, cl.DSN, `ALTER SYSTEM RESET default_transaction_read_only`)
	cl.Exec(`SELECT pg_reload_conf()`)
	for range 2 {
		if err := <-done; err != nil {
			t.Errorf("enqueue across a read-only spell: %v", err)
		}
	}
	var stored int
	if err := st.pool.QueryRow(t.Context(), st.sql(`SELECT count(*) FROM {s}.jobs`)).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != 101 {
		t.Errorf("%d jobs stored, want 101", stored)
	}
}
