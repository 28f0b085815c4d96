package engine

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// ackWait bounds how long a finished job's acknowledgement waits for the
// other jobs claimed with it, so that a slow job does not hold back the
// acknowledgements of fast ones.
const ackWait = time.Millisecond

// ackBatch collects the acknowledgements of the jobs one claim took from
// one shard and started at once, so that they commit in one store call
// (one transaction) rather than one group-commit operation each. It is
// flushed when its last job has finished, or ackWait after the first
// acknowledgement queued, whichever comes first. A job's acknowledgement
// still commits, lease-fenced, before the job counts as done.
type ackBatch struct {
	e         *Engine
	mu        sync.Mutex
	remaining int // started jobs that have neither queued an ack nor left
	cur       *ackRound
	timer     *time.Timer
}

// ackRound is one flush of an ackBatch.
type ackRound struct {
	params []store.CompleteParams
	errs   []error
	done   chan struct{}
}

// ack queues j's acknowledgement and returns once it has committed (or
// failed), with the store's error for it.
func (b *ackBatch) ack(j *store.Job, raw json.RawMessage) error {
	b.mu.Lock()
	r := b.cur
	if r == nil {
		r = &ackRound{done: make(chan struct{})}
		b.cur = r
	}
	idx := len(r.params)
	r.params = append(r.params, store.CompleteParams{Lease: lease(j), Result: raw, Keep: b.e.cfg.KeepCompleted, Now: b.e.cfg.Now()})
	b.remaining--
	if b.remaining <= 0 {
		b.takeLocked()
		b.mu.Unlock()
		b.flush(r)
	} else {
		if b.timer == nil {
			b.timer = time.AfterFunc(ackWait, b.expire)
		}
		b.mu.Unlock()
		<-r.done
	}
	return r.errs[idx]
}

// leave records that a job of the batch will not queue an ack.
func (b *ackBatch) leave() {
	b.mu.Lock()
	b.remaining--
	var r *ackRound
	if b.remaining <= 0 {
		r = b.takeLocked()
	}
	b.mu.Unlock()
	if r != nil {
		b.flush(r)
	}
}

// expire flushes what has queued when ackWait has passed.
func (b *ackBatch) expire() {
	b.mu.Lock()
	b.timer = nil
	r := b.takeLocked()
	b.mu.Unlock()
	if r != nil {
		b.flush(r)
	}
}

// takeLocked detaches the current round (nil if none) and stops its timer.
func (b *ackBatch) takeLocked() *ackRound {
	r := b.cur
	b.cur = nil
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	return r
}

func (b *ackBatch) flush(r *ackRound) {
	if r == nil {
		return
	}
	r.errs = b.e.cfg.Store.Complete(context.WithoutCancel(b.e.jobCtx), r.params)
	close(r.done)
}

// ackBatches returns an ackBatch for each shard of which at least two of
// the first n of one claim's jobs (those that start at once) come.
// Prefetched jobs are acknowledged alone: they start one by one as slots
// free, and holding the early ones' acknowledgements back for them would
// only serialise one big commit with the next claim.
func ackBatches(e *Engine, jobs []*store.Job, n int) map[int]*ackBatch {
	n = min(n, len(jobs))
	if n < 2 {
		return nil
	}
	var m map[int]*ackBatch
	for i, j := range jobs[:n] {
		if b := m[j.Shard]; b != nil {
			b.remaining++
			continue
		}
		for _, k := range jobs[i+1 : n] {
			if k.Shard == j.Shard {
				if m == nil {
					m = make(map[int]*ackBatch)
				}
				m[j.Shard] = &ackBatch{e: e, remaining: 1}
				break
			}
		}
	}
	return m
}
