package admission

import (
	"runtime"
	"sync"

	"github.com/queuemax/queuemax/runtime/store"
)

// flusher writes back, one goroutine at a time, what ending or starting
// jobs gathered for the store (slots to give back, rate tokens to move):
// the first job starts the goroutine, the others only add to what it
// takes next, so a burst costs one store write per round, not one per
// job. Its owner embeds it beside the mutex that guards what take reads.
type flusher struct {
	mu      *sync.Mutex     // the owner's
	jobs    *sync.WaitGroup // the engine's jobs: Stop waits for the writes
	running bool            // on mu
	// take, with mu held, empties what was gathered into the store's
	// gives; none left ends the goroutine. give writes them, without mu.
	take func() []store.LimitGive
	give func([]store.LimitGive)
}

// kick starts the goroutine unless it runs. The caller holds mu; kick
// releases it.
func (f *flusher) kick() {
	start := !f.running
	f.running = true
	f.mu.Unlock()
	if start {
		f.jobs.Add(1)
		go f.run()
	}
}

func (f *flusher) run() {
	defer f.jobs.Done()
	runtime.Gosched() // let the rest of a batch of jobs gather
	for {
		f.mu.Lock()
		gives := f.take()
		if len(gives) == 0 {
			f.running = false
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
		f.give(gives)
	}
}
