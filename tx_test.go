package queuemax

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

type txArgs struct {
	N int `json:"n"`
}

// TestClient_EnqueueTxSQLite: every transactional enqueue on the SQLite
// store returns ErrTxUnsupported and stores nothing, whatever tx is.
func TestClient_EnqueueTxSQLite(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 2})
	task := NewTask[txArgs](b.c, "t.Tx", TaskOptions{})
	var sqlTx *sql.Tx // any value: the store is checked first
	calls := map[string]func() error{
		"Client.EnqueueTx": func() error {
			_, err := b.c.EnqueueTx(b.ctx, sqlTx, "t.Tx", txArgs{1}, Opts{})
			return err
		},
		"Client.EnqueueManyTx": func() error {
			_, err := b.c.EnqueueManyTx(b.ctx, "not a tx", []EnqueueParams{{Task: "t.Tx", Payload: txArgs{1}}})
			return err
		},
		"Task.EnqueueTx":     func() error { _, err := task.EnqueueTx(b.ctx, nil, txArgs{1}); return err },
		"Task.EnqueueAtTx":   func() error { _, err := task.EnqueueAtTx(b.ctx, nil, time.Now(), txArgs{1}); return err },
		"Task.EnqueueInTx":   func() error { _, err := task.EnqueueInTx(b.ctx, nil, time.Hour, txArgs{1}); return err },
		"Task.EnqueueManyTx": func() error { _, err := task.EnqueueManyTx(b.ctx, nil, []txArgs{{1}, {2}}); return err },
	}
	for name, call := range calls {
		err := call()
		if !errors.Is(err, ErrTxUnsupported) {
			t.Errorf("%s error = %v, want ErrTxUnsupported", name, err)
		} else if !strings.Contains(err.Error(), "PostgreSQL") {
			t.Errorf("%s error %q does not say what to use instead", name, err)
		}
	}
	if s, err := b.c.Stats(b.ctx); err != nil || s.Pending+s.Scheduled != 0 {
		t.Errorf("Stats = %d pending, %d scheduled, %v; want nothing stored", s.Pending, s.Scheduled, err)
	}

	var unbound Task[txArgs]
	if _, err := unbound.EnqueueTx(b.ctx, nil, txArgs{}); !errors.Is(err, ErrNotBound) {
		t.Errorf("unbound EnqueueTx error = %v, want ErrNotBound", err)
	}
	if _, err := unbound.EnqueueManyTx(b.ctx, nil, nil); !errors.Is(err, ErrNotBound) {
		t.Errorf("unbound EnqueueManyTx error = %v, want ErrNotBound", err)
	}
	if _, err := unbound.EnqueueInTx(b.ctx, nil, time.Second, txArgs{}); !errors.Is(err, ErrNotBound) {
		t.Errorf("unbound EnqueueInTx error = %v, want ErrNotBound", err)
	}
	b.c.Close()
	if _, err := b.c.EnqueueTx(b.ctx, sqlTx, "t.Tx", txArgs{1}, Opts{}); !errors.Is(err, ErrClosed) {
		t.Errorf("EnqueueTx after Close error = %v, want ErrClosed", err)
	}
}

// fakeTx stands for an application's transaction: the jobs InsertTx gets
// are written to the real store only when it commits.
type fakeTx struct {
	mu      sync.Mutex
	pending [][]store.InsertParams
}

// txStore is a store that supports InsertTx with *fakeTx transactions.
type txStore struct {
	store.Store
	mu    sync.Mutex
	calls int
}

// Features adds Tx to the wrapped store's.
func (s *txStore) Features() store.Features {
	f := s.Store.Features()
	f.Tx = true
	return f
}

func (s *txStore) InsertTx(_ context.Context, tx any, jobs []store.InsertParams) ([]JobID, error) {
	ft, ok := tx.(*fakeTx)
	if !ok {
		return nil, errors.New("txStore: not a *fakeTx")
	}
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	ft.mu.Lock()
	defer ft.mu.Unlock()
	ft.pending = append(ft.pending, jobs)
	ids := make([]JobID, len(jobs))
	for i := range ids {
		ids[i] = JobID(1000 + i) // placeholders; the test reads the params
	}
	return ids, nil
}

// TestClient_EnqueueTxPreparesJobs: the transactional enqueues hand the
// store the same validated, defaulted rows Enqueue would store, reject bad
// input before touching tx, and neither wake the workers nor emit
// EventEnqueued (the commit is not visible to the client).
func TestClient_EnqueueTxPreparesJobs(t *testing.T) {
	t.Parallel()
	h := Define("t.Tx", TaskOptions{Priority: PriorityHigh, MaxRetries: Ptr(5), RetryDelay: 7 * time.Second},
		func(context.Context, txArgs) error { return nil })
	b := setup(t, Config{Shards: 4, Handlers: []Handler{h}})
	ts := &txStore{Store: b.c.st}
	b.c.st = ts
	enqueued := collect(b.c, EventEnqueued)
	// Drain the wake-up Open may not have sent; any later one is ours.
	select {
	case <-b.c.wake:
	default:
	}
	tx := &fakeTx{}
	task := NewTask[txArgs](b.c, "t.Tx", h.Options)

	if _, err := b.c.EnqueueTx(b.ctx, tx, "t.Tx", txArgs{1}, Opts{Key: Ptr(int64(3))}); err != nil {
		t.Fatalf("EnqueueTx: %v", err)
	}
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	if _, err := task.With(Opts{Priority: Ptr(PriorityLow)}).EnqueueAtTx(b.ctx, tx, at, txArgs{2}); err != nil {
		t.Fatalf("EnqueueAtTx: %v", err)
	}
	ids, err := task.EnqueueManyTx(b.ctx, tx, []txArgs{{3}, {4}})
	if err != nil || len(ids) != 2 {
		t.Fatalf("EnqueueManyTx = %v, %v; want 2 ids", ids, err)
	}
	if len(tx.pending) != 3 {
		t.Fatalf("InsertTx got %d calls, want 3", len(tx.pending))
	}
	one := tx.pending[0][0]
	if one.Task != "t.Tx" || string(one.Payload) != `{"n":1}` || one.Priority != PriorityHigh || one.MaxAttempts != 6 ||
		one.RetryDelay != 7*time.Second || one.PartitionKey == nil || *one.PartitionKey != 3 || one.Now.IsZero() {
		t.Errorf("EnqueueTx row = %+v; want the handler's defaults and key 3", one)
	}
	if two := tx.pending[1][0]; !two.RunAt.Equal(at) || two.Priority != PriorityLow {
		t.Errorf("EnqueueAtTx row: run at %v priority %d; want %v, low", two.RunAt, two.Priority, at)
	}
	if many := tx.pending[2]; len(many) != 2 || string(many[1].Payload) != `{"n":4}` {
		t.Errorf("EnqueueManyTx rows = %+v", many)
	}

	// Bad input never reaches tx.
	before := ts.calls
	if _, err := b.c.EnqueueTx(b.ctx, tx, "t.Tx", []int{1}, Opts{}); !errors.Is(err, ErrInvalidPayload) {
		t.Errorf("EnqueueTx(array) error = %v, want ErrInvalidPayload", err)
	}
	_, err = b.c.EnqueueManyTx(b.ctx, tx, []EnqueueParams{{Task: "t.Tx", Payload: txArgs{}}, {Task: "t.Tx", Payload: txArgs{}, Opts: Opts{Priority: Ptr(Priority(9))}}})
	if !errors.Is(err, ErrInvalidPriority) || !strings.Contains(err.Error(), "job 1") {
		t.Errorf("EnqueueManyTx error = %v, want ErrInvalidPriority naming job 1", err)
	}
	var nilTx *sql.Tx
	for _, bad := range []any{nil, nilTx} {
		if _, err := b.c.EnqueueTx(b.ctx, bad, "t.Tx", txArgs{}, Opts{}); !errors.Is(err, ErrInvalidTx) {
			t.Errorf("EnqueueTx(%T(nil)) error = %v, want ErrInvalidTx", bad, err)
		}
	}
	if ts.calls != before {
		t.Errorf("InsertTx called %d times for rejected input, want 0", ts.calls-before)
	}
	if _, err := b.c.EnqueueTx(b.ctx, "a string", "t.Tx", txArgs{}, Opts{}); err == nil || !strings.Contains(err.Error(), "fakeTx") {
		t.Errorf("EnqueueTx(string) error = %v, want the store's type error", err)
	}
	if ids, err := b.c.EnqueueManyTx(b.ctx, tx, nil); err != nil || ids != nil {
		t.Errorf("EnqueueManyTx(nil) = %v, %v; want nothing", ids, err)
	}

	select {
	case <-b.c.wake:
		t.Error("a transactional enqueue woke the workers before the commit")
	default:
	}
	select {
	case e := <-enqueued:
		t.Errorf("a transactional enqueue emitted %+v", e)
	default:
	}
}
