package pgstore

import (
	"context"
	"sync"
)

// maxGroup bounds how many items one grouped statement carries.
const maxGroup = 1000

// batcher is a group commit: concurrent callers queue their items, one of
// them (the leader) runs the whole queue as one statement and reports to
// each, then hands leadership to the first caller that queued meanwhile.
// One statement is in flight at a time, so while it commits the next group
// gathers. No goroutine is started; callers do the work.
type batcher[T, R any] struct {
	run   func(ctx context.Context, items []T) ([]R, error)
	mu    sync.Mutex
	queue []*call[T, R]
	busy  bool
}

type call[T, R any] struct {
	items []T
	res   []R
	err   error
	lead  chan bool
}

func newBatcher[T, R any](run func(ctx context.Context, items []T) ([]R, error)) *batcher[T, R] {
	return &batcher[T, R]{run: run}
}

// do runs items in a statement shared with concurrent callers and returns
// their results once it has committed.
func (b *batcher[T, R]) do(ctx context.Context, items []T) ([]R, error) {
	c := &call[T, R]{items: items, lead: make(chan bool, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	if b.busy {
		b.mu.Unlock()
		if !<-c.lead {
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
	res, err := b.run(context.WithoutCancel(ctx), all)
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
