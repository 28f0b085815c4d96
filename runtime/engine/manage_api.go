package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// The logic of some of the root package's operator methods (Client.Ready,
// Stats, RetryJob, Jobs, Purge, PeriodicTasks), which forward here.
// unavailable is the root's ErrShardUnavailable, which the errors wrap.

// ShardErrors returns an error wrapping unavailable for each shard of ss
// that could not be read.
func ShardErrors(ss []store.ShardStats, unavailable error) []error {
	var errs []error
	for _, sh := range ss {
		if !sh.Healthy {
			errs = append(errs, fmt.Errorf("%w: shard %d: %s", unavailable, sh.Shard, sh.LastError))
		}
	}
	return errs
}

// StoreReady reports whether st answers with every shard readable; the
// error of the first unreadable shard wraps unavailable.
func StoreReady(ctx context.Context, st store.Store, unavailable error) error {
	ss, err := st.Stats(ctx)
	if err != nil {
		return fmt.Errorf("queuemax: store unreachable: %w", err)
	}
	if errs := ShardErrors(ss, unavailable); len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// RetryJob re-queues failed job id at now; clearSteps (the root's
// Config.RequeueClearsSteps) first clears the job steps it recorded.
func RetryJob(ctx context.Context, st store.Store, id store.JobID, now time.Time, clearSteps bool) error {
	if clearSteps {
		// The job is failed, so no worker can record steps meanwhile.
		if j, err := st.Job(ctx, id); err == nil && j.Status == store.StatusFailed && len(j.Steps) > 0 {
			if err := st.ResetProgress(ctx, id, nil, now); err != nil {
				return err
			}
		}
	}
	return st.RetryJob(ctx, id, now)
}

// CheckStatuses reports the first of statuses that names no status; an
// empty one is skipped.
func CheckStatuses(statuses ...store.Status) error {
	for _, s := range statuses {
		if s == "" {
			continue
		}
		if _, err := store.ParseStatus(string(s)); err != nil {
			return err
		}
	}
	return nil
}

// LastOutcome returns the status of job id, a periodic task's last job:
// completed once its row is gone.
func LastOutcome(ctx context.Context, st store.Store, id store.JobID) (string, error) {
	j, err := st.Job(ctx, id)
	switch {
	case errors.Is(err, store.ErrJobNotFound):
		return string(store.StatusCompleted), nil
	case err != nil:
		return "", err
	}
	return string(j.Status), nil
}

// PeriodicTasks lists the periodic tasks stored by any process's
// scheduler, with their next and last runs and the last run's outcome
// (queuemax.Client.PeriodicTasks).
func PeriodicTasks(ctx context.Context, st store.Store) ([]queuemaxtype.PeriodicInfo, error) {
	states, err := st.PeriodicList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]queuemaxtype.PeriodicInfo, len(states))
	for i, s := range states {
		p := queuemaxtype.PeriodicInfo{Task: s.Task, Schedule: s.Schedule, Misfire: s.Misfire, NextRun: s.NextRun, LastRun: s.LastRun, LastJobID: s.LastJobID}
		if s.LastJobID != 0 {
			if p.LastOutcome, err = LastOutcome(ctx, st, s.LastJobID); err != nil {
				return nil, err
			}
		}
		out[i] = p
	}
	return out, nil
}
