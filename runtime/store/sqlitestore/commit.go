package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"runtime"
	"sync"

	"github.com/queuemax/queuemax/runtime/store"
)

// maxGroup bounds how many operations share one transaction, so that a
// steady stream of callers cannot grow one transaction without limit.
const maxGroup = 512

// itemError marks an error that belongs to one operation of a group (such as
// a lost lease). It does not roll back the others.
type itemError struct{ err error }

func (e itemError) Error() string { return e.err.Error() }
func (e itemError) Unwrap() error { return e.err }

// asItem wraps err so that the committer keeps the rest of the group.
func asItem(err error) error { return itemError{err} }

// op is one caller's share of a group transaction.
type op struct {
	fn  opFunc
	err error
	// lead receives true when this op's caller must lead the next group,
	// or false once the op's group has committed (or failed).
	lead chan bool
}

// opFunc is one operation of a group. It adds to counts what the shard's
// lifetime counters should gain; they are written once per group.
type opFunc func(ctx context.Context, tx *sql.Tx, counts *groupCounts) error

// groupCounts accumulates shard_metadata counter increments of a group,
// and caches the group transaction's bindings of prepared statements.
type groupCounts struct {
	processed, failed int
	bound             []boundStmt
	inline            [6]boundStmt // bound's first backing array: no allocation for a usual group
}

// tally and restore save and roll back the counter increments around one
// operation whose item failed.
func (g *groupCounts) tally() [2]int    { return [2]int{g.processed, g.failed} }
func (g *groupCounts) restore(t [2]int) { g.processed, g.failed = t[0], t[1] }

type boundStmt struct{ st, tx *sql.Stmt }

// stmt returns st bound to tx, binding it once per group rather than once
// per operation.
func (g *groupCounts) stmt(ctx context.Context, tx *sql.Tx, st *sql.Stmt) *sql.Stmt {
	for _, b := range g.bound {
		if b.st == st {
			return b.tx
		}
	}
	if g.bound == nil {
		g.bound = g.inline[:0]
	}
	b := tx.StmtContext(ctx, st)
	g.bound = append(g.bound, boundStmt{st, b})
	return b
}

// committer is a group commit on one shard's writer: concurrent callers
// queue their operations, one of them (the leader) runs the whole queue in
// one transaction and reports to each, then hands leadership to the first
// caller that queued meanwhile. No goroutine is started; callers do the work.
type committer struct {
	db    *sql.DB
	shard int
	stmts *stmts // the shard's prepared statements (the counter updates)
	mu    sync.Mutex
	queue []*op
	busy  bool
}

// do runs fn inside a transaction shared with concurrent callers and returns
// once that transaction has committed or rolled back. An error from fn made
// with asItem fails only this caller; any other error rolls back the group.
func (c *committer) do(ctx context.Context, fn opFunc) error {
	if c.db == nil {
		return store.ErrReadOnly
	}
	o := &op{fn: fn, lead: make(chan bool, 1)}
	c.mu.Lock()
	c.queue = append(c.queue, o)
	if c.busy {
		c.mu.Unlock()
		if !<-o.lead {
			return o.err
		}
		// Leadership was handed to us; our op is at the head of the queue.
	} else {
		c.busy = true
		c.mu.Unlock()
		// A new leader yields once so that callers already runnable (the
		// other jobs of a claimed batch finishing together) join its group
		// instead of each paying for a commit of their own.
		runtime.Gosched()
	}
	c.mu.Lock()
	n := min(len(c.queue), maxGroup)
	group := c.queue[:n:n]
	c.queue = c.queue[n:]
	c.mu.Unlock()

	c.run(context.WithoutCancel(ctx), group)

	c.mu.Lock()
	if len(c.queue) > 0 {
		next := c.queue[0]
		c.mu.Unlock()
		next.lead <- true
	} else {
		c.busy = false
		c.mu.Unlock()
	}
	for _, g := range group {
		if g != o {
			g.lead <- false
		}
	}
	return o.err
}

func (c *committer) run(ctx context.Context, group []*op) {
	fail := func(err error) {
		for _, g := range group {
			g.err = err
		}
	}
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		fail(err)
		return
	}
	var counts groupCounts
	for _, g := range group {
		before := counts.tally()
		err := g.fn(ctx, tx, &counts)
		var ie itemError
		if errors.As(err, &ie) {
			g.err = ie.err
			counts.restore(before)
			continue
		}
		if err != nil {
			tx.Rollback()
			fail(err)
			return
		}
	}
	if counts.processed > 0 {
		if _, err := counts.stmt(ctx, tx, c.stmts.countProcessed).ExecContext(ctx, counts.processed, c.shard); err != nil {
			tx.Rollback()
			fail(err)
			return
		}
	}
	if counts.failed > 0 {
		if _, err := counts.stmt(ctx, tx, c.stmts.countFailed).ExecContext(ctx, counts.failed, c.shard); err != nil {
			tx.Rollback()
			fail(err)
			return
		}
	}
	if err := tx.Commit(); err != nil {
		fail(err)
	}
}
