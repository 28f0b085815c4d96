package pgstore_test

import (
	"testing"

	"github.com/queuemax/queuemax/queuemaxpg/pgstore"
	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/storetest"
)

// BenchmarkKeyHeads: the cost of finding a free key's job behind a
// backlog of 100,000 jobs of keys at their limit (see storetest).
func BenchmarkKeyHeads(b *testing.B) {
	storetest.BenchmarkKeyHeads(b, func(b *testing.B) store.Store { return open(b, pgstore.Options{}) })
}

// BenchmarkClaimBehindPaused: a claim behind 100,000 jobs of a paused or
// capped queue (see storetest).
func BenchmarkClaimBehindPaused(b *testing.B) {
	storetest.BenchmarkClaimBehindPaused(b, func(b *testing.B) store.Store { return open(b, pgstore.Options{}) })
}
