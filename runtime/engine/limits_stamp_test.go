package engine

import (
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/breaker"
	"github.com/queuemax/queuemax/runtime/store"
)

// TestProducer_RateTokensCountFromStart: jobs claimed under a global rate
// that wait five seconds for a worker spend their tokens when their
// handlers start, not at the claim: a period after the claim no token is
// back, a period after the starts both are. Without the move the second
// claim would take two more jobs while the first two had just started.
func TestProducer_RateTokensCountFromStart(t *testing.T) {
	r := newRig(t, 1)
	r.cfg.Tasks = []string{"t"}
	r.cfg.Breakers = map[string]breaker.Policy{"t": {Threshold: 5, Timeout: time.Minute}}
	r.cfg.GlobalLimits = map[string]store.LimitRule{"t": {Rate: 2, Per: time.Second}}
	r.enqueue("t", 0, 6)
	e := r.engine()
	p := newProducer(e)
	claim := r.now
	if n, _, err := p.RunOnce(t.Context(), r.now); err != nil || n != 2 {
		t.Fatalf("first RunOnce = %d, %v; want the rate's 2 jobs", n, err)
	}
	r.now = claim.Add(5 * time.Second) // the jobs waited for a worker
	settle(e, -1)
	e.jobWG.Wait() // the jobs are let go and their tokens moved
	r.now = claim.Add(5*time.Second + 100*time.Millisecond)
	if n, _, err := p.RunOnce(t.Context(), r.now); err != nil || n != 0 {
		t.Fatalf("RunOnce 100ms after the starts = %d, %v; want none (the tokens count from the starts)", n, err)
	}
	r.now = claim.Add(5*time.Second + 1100*time.Millisecond)
	if n, _, err := p.RunOnce(t.Context(), r.now); err != nil || n != 2 {
		t.Fatalf("RunOnce a period after the starts = %d, %v; want 2", n, err)
	}
	settle(e, -1)
	e.jobWG.Wait()
}
