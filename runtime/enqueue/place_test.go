package enqueue

import (
	"testing"

	"github.com/queuemax/queuemax/runtime/store"
)

func TestRouteBatch(t *testing.T) {
	t.Parallel()
	keyless := func(n int) []store.InsertParams {
		ps := make([]store.InsertParams, n)
		for i := range ps {
			ps[i].Shard = i % 4 // prepare's random shards
		}
		return ps
	}
	shardsOf := func(ps []store.InsertParams) map[int]int {
		m := map[int]int{}
		for _, p := range ps {
			m[p.Shard]++
		}
		return m
	}
	// One call of keyless jobs: one shard; calls take the shards in turn.
	seen := map[int]bool{}
	for range 4 {
		ps := keyless(100)
		routeBatch(ps, 4)
		m := shardsOf(ps)
		if len(m) != 1 {
			t.Fatalf("100 keyless jobs on shards %v, want one shard", m)
		}
		for sh := range m {
			seen[sh] = true
		}
	}
	if len(seen) != 4 {
		t.Errorf("4 calls used shards %v, want all 4 in turn", seen)
	}
	// A large call: contiguous runs of n/shards, every shard once.
	ps := keyless(10_000)
	routeBatch(ps, 4)
	if m := shardsOf(ps); len(m) != 4 || m[ps[0].Shard] != 2500 {
		t.Errorf("10,000 keyless jobs on %v, want 2,500 on each of 4 shards", m)
	}
	for i := 1; i < len(ps); i++ {
		if ps[i].Shard != ps[i-1].Shard && i%2500 != 0 {
			t.Fatalf("job %d on shard %d after shard %d: runs not contiguous", i, ps[i].Shard, ps[i-1].Shard)
		}
	}
	// 2,000 jobs on 4 shards: runs of batchShardChunk, two shards.
	ps = keyless(2000)
	routeBatch(ps, 4)
	if m := shardsOf(ps); len(m) != 2 {
		t.Errorf("2,000 keyless jobs on %v, want 2 shards of %d", m, batchShardChunk)
	}
	// Keyed and unique jobs keep their shard; keyless ones join the first.
	key := int64(7)
	ps = keyless(10)
	ps[3].PartitionKey, ps[3].Shard = &key, 2
	ps[6].Unique, ps[6].Shard = &store.UniqueParams{Key: "u"}, 1
	routeBatch(ps, 4)
	for i, p := range ps {
		want := 2
		if i == 6 {
			want = 1
		}
		if p.Shard != want {
			t.Errorf("job %d on shard %d, want %d", i, p.Shard, want)
		}
	}
	// One shard, one job: nothing to route.
	ps = keyless(1)
	routeBatch(ps, 4)
	if ps[0].Shard != 0 {
		t.Errorf("a lone job moved to shard %d", ps[0].Shard)
	}
}
