package admission

import (
	"context"
	"fmt"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// The logic of the root package's Client.GlobalLimits, Stats' breaker
// figures and SetQueueLimits' check, which forward here.

// ReadInfos lists the limits of rules with their use, reading the
// limits' state rows, the queues' stored rules and, when there are any,
// each queue's claimed jobs from st at now (see Infos).
func ReadInfos(ctx context.Context, st store.Store, now time.Time, rules Rules) ([]LimitInfo, error) {
	usage, err := st.LimitUsage(ctx, now)
	if err != nil {
		return nil, err
	}
	queues, err := st.QueueLimits(ctx)
	if err != nil {
		return nil, err
	}
	var claimed map[string]int // a queue's running jobs are at most those claimed
	if len(queues) > 0 {
		qs, err := st.QueueList(ctx)
		if err != nil {
			return nil, err
		}
		claimed = make(map[string]int, len(qs))
		for _, q := range qs {
			claimed[store.QueueOf(q.Name)] = int(q.Processing)
		}
	}
	return Infos(rules, usage, queues, claimed), nil
}

// BreakerSummary returns Stats' figures of the stored breakers infos:
// each task's state, the worst state and the most consecutive failures of
// any task.
func BreakerSummary(infos []BreakerInfo) (circuits map[string]string, worst string, failures int) {
	rank := map[string]int{store.BreakerClosed: 0, store.BreakerHalfOpen: 1, store.BreakerOpen: 2}
	circuits = make(map[string]string, len(infos))
	worst = store.BreakerClosed
	for _, b := range infos {
		circuits[b.Task] = b.State
		if rank[b.State] > rank[worst] {
			worst = b.State
		}
		failures = max(failures, b.Failures)
	}
	return circuits, worst, failures
}

// CheckQueueLimits says what is wrong with the limits of queue (a rate of
// rate per per, and concurrency) for SetQueueLimits; the error wraps
// store.ErrInvalidLimit.
func CheckQueueLimits(queue string, rate int, per time.Duration, concurrency int) error {
	switch {
	case concurrency < 0:
		return fmt.Errorf("%w: queue %q: concurrency %d (want ≥ 0; 0 clears it)", store.ErrInvalidLimit, queue, concurrency)
	case rate < 0:
		return fmt.Errorf("%w: queue %q: rate %d per %v (want ≥ 0; 0 clears it)", store.ErrInvalidLimit, queue, rate, per)
	case rate > 0 && per <= 0:
		return fmt.Errorf("%w: queue %q: rate %d per %v (want a positive period, e.g. 50/s)", store.ErrInvalidLimit, queue, rate, per)
	case rate == 0 && per < 0:
		return fmt.Errorf("%w: queue %q: rate period %v (want ≥ 0)", store.ErrInvalidLimit, queue, per)
	}
	return nil
}
