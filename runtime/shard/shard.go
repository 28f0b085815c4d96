// Package shard maps partition keys to shard indexes. It is pure and does no I/O.
//
// Not API: import github.com/queuemax/queuemax instead.
package shard

// MaxShards is the largest shard count a data directory may have. A JobID keeps
// the shard index in its low 10 bits.
const MaxShards = 1024

// ForKey returns the shard for partition key k among n shards, using floored
// modulo so that negative keys land in [0, n) exactly as queue-max routes them
// (-1 mod 6 = 5).
func ForKey(k int64, n int) int {
	m := k % int64(n)
	if m < 0 {
		m += int64(n)
	}
	return int(m)
}

// Groups splits n shards into consecutive groups the way queue-max's ShardGroup
// does: with 8 or more shards each group holds max(1, min(4, n/4)) shards;
// below 8 all shards form one group.
func Groups(n int) [][]int {
	size := n
	if n >= 8 {
		size = max(1, min(4, n/4))
	}
	var out [][]int
	for start := 0; start < n; start += size {
		g := make([]int, 0, size)
		for i := start; i < min(n, start+size); i++ {
			g = append(g, i)
		}
		out = append(out, g)
	}
	return out
}
