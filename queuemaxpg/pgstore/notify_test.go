package pgstore

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuemax/queuemax/internal/pgtest"
	"github.com/queuemax/queuemax/runtime/store"
)

func TestNotifyGate(t *testing.T) {
	t.Parallel()
	sent := make(chan struct{}, 10)
	g := newNotifyGate(func() { sent <- struct{}{} })
	t0 := time.Now()
	if !g.loud(t0) {
		t.Fatal("the first insert does not notify")
	}
	if g.loud(t0.Add(notifyWindow / 2)) {
		t.Fatal("an insert inside the window notifies")
	}
	g.quietDone()
	g.quietDone() // one trailing notification covers both
	select {
	case <-sent:
	case <-time.After(10 * time.Second):
		t.Fatal("no trailing notification after a quiet insert")
	}
	if !g.loud(time.Now().Add(notifyWindow)) {
		t.Fatal("an insert a window after the last notification does not notify")
	}
	g.quietDone()
	if !g.close() {
		// The trailing notification may have gone out already.
		select {
		case <-sent:
		case <-time.After(10 * time.Second):
			t.Fatal("close reports no trailing notification due, and none was sent")
		}
	}
	if len(sent) != 0 {
		t.Errorf("%d notifications more than quiet windows", len(sent))
	}
	if !g.loud(time.Now()) {
		t.Error("after close, inserts do not notify")
	}

	// A notifying insert after a quiet one covers it: no trailing
	// notification (the window is long, so only the insert can end it).
	g = newNotifyGate(func() { sent <- struct{}{} })
	g.window = time.Hour
	t0 = time.Now()
	g.loud(t0)
	if g.loud(t0.Add(time.Minute)) {
		t.Fatal("an insert inside the window notifies")
	}
	g.quietDone()
	if !g.loud(t0.Add(2 * time.Hour)) {
		t.Fatal("the first insert after the window does not notify")
	}
	if g.close() || len(sent) != 0 {
		t.Error("a trailing notification is still due after a notifying insert covered the quiet one")
	}
	// A notifying insert that fails covers nothing: its caller calls
	// quietDone, and the notification is due again.
	g = newNotifyGate(func() { sent <- struct{}{} })
	g.window = time.Hour
	g.loud(t0)
	g.loud(t0.Add(time.Minute))
	g.quietDone()
	g.loud(t0.Add(2 * time.Hour))
	g.quietDone() // it failed
	if !g.close() {
		t.Error("no trailing notification due after the covering insert failed")
	}
}

// TestQuietInsertDoesNotNotify checks the statements themselves: the quiet
// variants skip the trigger's notification, the others send it.
func TestQuietInsertDoesNotNotify(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	s, err := Open(t.Context(), Options{DSN: dsn, Schema: pgtest.Schema(t, dsn), MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	channel := s.schema + ".jobs"
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	j := store.InsertParams{Task: "t", Payload: json.RawMessage(`{}`), MaxAttempts: 3}
	keys := 0
	unique := func() store.InsertParams {
		keys++
		u := j
		u.Unique = &store.UniqueParams{Key: fmt.Sprint("k", keys),
			States: []store.Status{store.StatusPending, store.StatusScheduled, store.StatusProcessing}}
		return u
	}
	for _, tc := range []struct {
		name     string
		run      func() error
		notifies bool
	}{
		{"insertOneQuiet", func() error { _, err := insertOne(ctx, poolQuerier{s}, s.q.insertOneQuiet, j); return err }, false},
		{"insertQuiet", func() error {
			_, err := insertWith(ctx, poolQuerier{s}, s.q.insertQuiet, []store.InsertParams{j, j})
			return err
		}, false},
		{"insertOne", func() error { _, err := insertOne(ctx, poolQuerier{s}, s.q.insertOne, j); return err }, true},
		{"insert", func() error {
			_, err := insertWith(ctx, poolQuerier{s}, s.q.insert, []store.InsertParams{j, j})
			return err
		}, true},
		{"insertUniqueQuiet", func() error {
			_, err := insertUniqueOne(ctx, poolQuerier{s}, s.q.insertUniqueQuiet, unique())
			return err
		}, false},
		{"insertUnique", func() error {
			_, err := insertUniqueOne(ctx, poolQuerier{s}, s.q.insertUnique, unique())
			return err
		}, true},
	} {
		if err := tc.run(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		// Notifications arrive in commit order: a marker sent after the
		// statement comes first unless the statement notified.
		if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1::text, 'marker')`, channel); err != nil {
			t.Fatal(err)
		}
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := n.Payload != "marker"; got != tc.notifies {
			t.Errorf("%s: notified = %v, want %v", tc.name, got, tc.notifies)
		}
		if tc.notifies {
			if n, err := conn.WaitForNotification(ctx); err != nil || n.Payload != "marker" {
				t.Fatalf("%s: after the insert's notification: %v, %v; want the marker", tc.name, n, err)
			}
		}
	}
}

// TestEveryInsertWakesOtherProcesses enqueues one job at a time (every
// other one unique), faster
// than the notification window (lengthened here, so that nearly every
// insert is quiet) allows notifications, while another store (another
// process, for all it knows) claims them, waking only on notifications:
// its poll interval is an hour, so a job whose insert neither notified
// nor was followed by a trailing notification would never be claimed.
func TestEveryInsertWakesOtherProcesses(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	a, err := Open(t.Context(), Options{DSN: dsn, Schema: schema, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.notifies.window = 300 * time.Millisecond
	b, err := Open(t.Context(), Options{DSN: dsn, Schema: schema, MaxConns: 4, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := t.Context()
	const n = 200
	var inserted atomic.Int64
	errc := make(chan error, 1)
	go func() {
		j := store.InsertParams{Task: "t", Payload: json.RawMessage(`{}`), MaxAttempts: 3}
		for i := range n {
			j := j
			if i%2 == 1 { // unique jobs take their own statement
				j.Unique = &store.UniqueParams{Key: fmt.Sprint("k", i),
					States: []store.Status{store.StatusPending, store.StatusScheduled, store.StatusProcessing}}
			}
			if _, err := a.Insert(ctx, []store.InsertParams{j}); err != nil {
				errc <- err
				return
			}
			inserted.Add(1)
		}
		errc <- nil
	}()
	claimed := 0
	deadline := time.After(60 * time.Second)
	for claimed < n {
		changed := b.Changes()
		jobs, err := b.Claim(ctx, store.ClaimParams{WorkerID: "b", Max: n})
		if err != nil {
			t.Fatal(err)
		}
		claimed += len(jobs)
		if len(jobs) > 0 {
			continue
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("claimed %d of %d jobs (%d inserted); no notification for the rest", claimed, n, inserted.Load())
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	notified, polled, _ := b.ListenerStats()
	t.Logf("%d jobs, %d notifications received, %d changes found by polling", n, notified, polled)
}
