package shard

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestForKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key  int64
		n    int
		want int
	}{
		{0, 6, 0}, {7, 6, 1}, {-1, 6, 5}, {-7, 6, 5}, {-6, 6, 0}, {5, 1, 0}, {-9223372036854775808, 6, 4},
	}
	for _, tt := range tests {
		if got := ForKey(tt.key, tt.n); got != tt.want {
			t.Errorf("ForKey(%d, %d) = %d, want %d", tt.key, tt.n, got, tt.want)
		}
	}
}

func TestGroups(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    int
		want [][]int
	}{
		{1, [][]int{{0}}},
		{6, [][]int{{0, 1, 2, 3, 4, 5}}},
		{8, [][]int{{0, 1}, {2, 3}, {4, 5}, {6, 7}}},
		{9, [][]int{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8}}},
		{12, [][]int{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9, 10, 11}}},
		{16, [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, Groups(tt.n)); diff != "" {
			t.Errorf("Groups(%d) mismatch (-want +got):\n%s", tt.n, diff)
		}
	}
}
