package enqueue

import (
	"math/rand/v2"
	"sync/atomic"

	"github.com/queuemax/queuemax/runtime/shard"
	"github.com/queuemax/queuemax/runtime/store"
)

// Place chooses the shards of one call's jobs, once, after the enqueue
// middleware (which may change a job's partition key): a partition key's
// shard, else a unique key's, and the call's other jobs together (see
// routeBatch), so that a call is one transaction per shard it touches.
func (r *Resolver) Place(ps []store.InsertParams) {
	for i := range ps {
		p := &ps[i]
		switch {
		case p.PartitionKey != nil:
			p.Shard = shard.ForKey(*p.PartitionKey, r.Shards)
		case p.Unique != nil:
			p.Shard = uniqueShard(p.Unique.Key, r.Shards)
		default:
			p.Shard = rand.IntN(r.Shards)
		}
	}
	routeBatch(ps, r.Shards)
}

// batchShardChunk is the smallest run of one call's keyless jobs that
// Place puts on one shard.
const batchShardChunk = 1000

// batchShardNext is the shard (modulo the shard count) that the next
// call's keyless jobs go to: calls take the shards in turn, from a random
// start per process, so that batches spread evenly over the shards.
var batchShardNext atomic.Uint64

func init() { batchShardNext.Store(rand.Uint64N(1 << 32)) }

// routeBatch chooses the shards of one call's keyless jobs (no partition
// key, not unique: Place gave each a random shard). A call that stays on
// one shard is one transaction; one that spans shards takes the store's
// two-phase path (stage every row, decide, publish), which writes each row
// twice. So the keyless jobs stay together: up to
// max(batchShardChunk, n/shards) of them on one shard, in call order, the
// shards taken in turn. When the call also has jobs whose shard is fixed
// (a key or a unique key), the keyless ones join the first such job's
// shard if they fit in one chunk, so that a call on one key stays one
// transaction.
func routeBatch(ps []store.InsertParams, shards int) {
	if shards <= 1 || len(ps) < 2 {
		return
	}
	keyless, fixed := 0, -1
	for i := range ps {
		if ps[i].PartitionKey == nil && ps[i].Unique == nil {
			keyless++
		} else if fixed < 0 {
			fixed = ps[i].Shard
		}
	}
	if keyless == 0 {
		return
	}
	chunk := max(batchShardChunk, (keyless+shards-1)/shards)
	var sh int
	switch {
	case fixed >= 0 && keyless <= chunk:
		sh = fixed
	default:
		sh = int(batchShardNext.Add(1) % uint64(shards))
	}
	n := 0
	for i := range ps {
		if ps[i].PartitionKey != nil || ps[i].Unique != nil {
			continue
		}
		if n == chunk {
			n, sh = 0, (sh+1)%shards
		}
		ps[i].Shard = sh
		n++
	}
}
