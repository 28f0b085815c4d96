package pgstore

import (
	"context"
	"slices"
	"sync"
)

// maxGroup bounds how many items one grouped statement carries.
const maxGroup = 1000

// batcher is a group commit: concurrent callers queue their items, one of
// them (the leader) runs the whole queue as one statement and reports to
// each, then hands leadership to the first caller that queued meanwhile.
// One statement is in flight at a time, so while it commits the next group
// gathers. No goroutine is started; callers do the work.
//
// A batcher made with newCallerBatcher (inserts) lets a caller whose
// context ends while its items still wait in the queue withdraw them and
// return its context's error (they were never sent), and runs a group
// with a context that ends only once every caller in it has given up.
// Others (acknowledgements) run every group to its end.
type batcher[T, R any] struct {
	run     func(ctx context.Context, items []T) ([]R, error)
	callers bool // follow the callers' contexts (see above)
	mu      sync.Mutex
	queue   []*call[T, R]
	busy    bool
}

type call[T, R any] struct {
	ctx    context.Context
	items  []T
	res    []R
	err    error
	lead   chan bool
	handed bool // chosen as the next leader (under mu)
}

func newBatcher[T, R any](run func(ctx context.Context, items []T) ([]R, error)) *batcher[T, R] {
	return &batcher[T, R]{run: run}
}

func newCallerBatcher[T, R any](run func(ctx context.Context, items []T) ([]R, error)) *batcher[T, R] {
	return &batcher[T, R]{run: run, callers: true}
}

// wait waits for c's turn: true when c leads the next group, false when
// a leader ran c's items. A caller of a callers batcher whose context
// ends while its items wait withdraws them and returns its error.
func (b *batcher[T, R]) wait(c *call[T, R]) (lead bool, err error) {
	if !b.callers || c.ctx.Done() == nil {
		return <-c.lead, nil
	}
	select {
	case lead := <-c.lead:
		return lead, nil
	case <-c.ctx.Done():
	}
	b.mu.Lock()
	if i := slices.Index(b.queue, c); i >= 0 && !c.handed {
		b.queue = slices.Delete(b.queue, i, i+1)
		b.mu.Unlock()
		return false, context.Cause(c.ctx)
	}
	b.mu.Unlock()
	return <-c.lead, nil // taken into a group, or leading next: go on
}

// groupCtx is the context a group runs with: for a callers batcher, one
// that ends once every caller's context has ended; else none that ends.
func (b *batcher[T, R]) groupCtx(ctx context.Context, group []*call[T, R]) (context.Context, func()) {
	gctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	if !b.callers {
		return gctx, func() { cancel(nil) }
	}
	left := len(group)
	var mu sync.Mutex
	stops := make([]func() bool, 0, len(group))
	for _, g := range group {
		stops = append(stops, context.AfterFunc(g.ctx, func() {
			mu.Lock()
			left--
			all := left == 0
			mu.Unlock()
			if all {
				cancel(context.Cause(g.ctx))
			}
		}))
	}
	return gctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel(nil)
	}
}

// do runs items in a statement shared with concurrent callers and returns
// their results once it has committed.
func (b *batcher[T, R]) do(ctx context.Context, items []T) ([]R, error) {
	c := &call[T, R]{ctx: ctx, items: items, lead: make(chan bool, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	if b.busy {
		b.mu.Unlock()
		lead, err := b.wait(c)
		if err != nil {
			return nil, err
		}
		if !lead {
			return c.res, c.err
		}
	} else {
		b.busy = true
		b.mu.Unlock()
	}
	b.mu.Lock()
	n, size := 0, 0
	for n < len(b.queue) && (n == 0 || size+len(b.queue[n].items) <= maxGroup) {
		size += len(b.queue[n].items)
		n++
	}
	group := b.queue[:n:n]
	b.queue = b.queue[n:]
	b.mu.Unlock()

	all := make([]T, 0, size)
	for _, g := range group {
		all = append(all, g.items...)
	}
	gctx, done := b.groupCtx(ctx, group)
	res, err := b.run(gctx, all)
	done()
	off := 0
	for _, g := range group {
		if err != nil {
			g.err = err
		} else {
			g.res = res[off : off+len(g.items)]
		}
		off += len(g.items)
	}

	b.mu.Lock()
	if len(b.queue) > 0 {
		next := b.queue[0]
		next.handed = true
		b.mu.Unlock()
		next.lead <- true
	} else {
		b.busy = false
		b.mu.Unlock()
	}
	for _, g := range group {
		if g != c {
			g.lead <- false
		}
	}
	return c.res, c.err
}
