// Package storetest is the conformance suite every store.Store
// implementation must pass. An implementation's test calls Run with a
// constructor that opens a fresh, empty store.
//
// Not API: import github.com/queuemax/queuemax instead.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// Opener opens a fresh, empty store with the given number of shards. The
// test closes it.
type Opener func(t *testing.T, shards int) store.Store

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// Run runs the whole suite.
// Run runs the whole suite, one subtest per area, each runnable alone:
// go test -run 'TestConformance/Claim' (or 'TestConformance/Claim/PriorityThenFIFO').
func Run(t *testing.T, open Opener) {
	s := &suite{open: open}
	for _, a := range areas {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			a.run(t, s)
		})
	}
}

// areas are the suite's parts, by what they cover.
var areas = []struct {
	name string
	run  func(*testing.T, *suite)
}{
	{"Insert", testInsertArea},
	{"Claim", testClaimArea},
	{"Ack", testAckArea},
	{"Retry", testRetryArea},
	{"Recovery", testRecoveryArea},
	{"Unique", testUniqueArea},
	{"Queues", testQueuesArea},
	{"Retention", testRetentionArea},
	{"CancelSnooze", testCancelSnoozeArea},
	{"Admin", testAdminArea},
	{"Periodic", testPeriodicArea},
	{"Breakers", testBreakersArea},
	{"Limits", testLimitsArea},
	{"QueueLimits", testQueueLimitsArea},
	{"LimitsByKey", testKeyedArea},
	{"Workflow", testWorkflowArea},
	{"WorkflowRetry", testWorkflowRetryArea}, // workflow_retry.go
	{"Features", testFeaturesArea},
	{"Catalog", testCatalogArea}, // catalog.go
	{"Progress", testProgressArea},
}

// suite is what every area's tests share: how to open a fresh store.
type suite struct{ open Opener }

type testBundle struct {
	st  store.Store
	ctx context.Context
}

// setup opens a fresh store with the given number of shards, closed when
// the test ends.
func (s *suite) setup(t *testing.T, shards int) *testBundle {
	t.Helper()
	st := s.open(t, shards)
	t.Cleanup(func() { st.Close() })
	return &testBundle{st: st, ctx: t.Context()}
}

// insert stores jobs, filling in a payload, 4 attempts and t0 where unset.
func insert(t *testing.T, b *testBundle, jobs ...store.InsertParams) []store.JobID {
	t.Helper()
	for i := range jobs {
		if jobs[i].Payload == nil {
			jobs[i].Payload = json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))
		}
		if jobs[i].MaxAttempts == 0 {
			jobs[i].MaxAttempts = 4
		}
		if jobs[i].Now.IsZero() {
			jobs[i].Now = t0
		}
	}
	ids, err := b.st.Insert(b.ctx, jobs)
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	return ids
}

// claim claims up to max jobs as worker w1.
func claim(t *testing.T, b *testBundle, max int, now time.Time) []*store.Job {
	t.Helper()
	jobs, err := b.st.Claim(b.ctx, store.ClaimParams{WorkerID: "w1", Max: max, Now: now})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return jobs
}

// ids returns the jobs' IDs in order.
func ids(jobs []*store.Job) []store.JobID {
	out := make([]store.JobID, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// stats sums every shard's stats, failing the test on an unhealthy shard.
func stats(t *testing.T, b *testBundle) store.ShardStats {
	t.Helper()
	ss, err := b.st.Stats(b.ctx)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	for _, s := range ss {
		if !s.Healthy {
			t.Fatalf("shard %d unhealthy: %s", s.Shard, s.LastError)
		}
	}
	return queuemaxtype.SumShards(ss)
}

// counts returns pending, scheduled, processing, failed, completed and
// dead letters.
func counts(s store.ShardStats) [6]int64 {
	return [6]int64{s.Pending, s.Scheduled, s.Processing, s.Failed, s.Completed, s.DeadLetters}
}

var cmpErrors = cmp.Comparer(func(a, b error) bool { return errors.Is(a, b) || errors.Is(b, a) })
