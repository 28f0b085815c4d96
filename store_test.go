package queuemax_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queuemax/queuemax"
)

// TestOpenSQLite_Layouts: a new directory is native unless the queue-max
// layout is asked for; a client runs on a store OpenSQLite opened; asking
// for the other layout fails with ErrLayoutMismatch naming the directory.
func TestOpenSQLite_Layouts(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, tt := range []struct {
		layout, want, other queuemax.SQLiteLayout
	}{
		{"", queuemax.LayoutNative, queuemax.LayoutQueueMax},
		{queuemax.LayoutQueueMax, queuemax.LayoutQueueMax, queuemax.LayoutNative},
	} {
		dir := filepath.Join(t.TempDir(), "data")
		st, err := queuemax.OpenSQLite(ctx, queuemax.SQLiteOptions{Dir: dir, Shards: 2, Layout: tt.layout})
		if err != nil {
			t.Fatalf("OpenSQLite(%q): %v", tt.layout, err)
		}
		c, err := queuemax.Open(ctx, queuemax.Config{Store: st, AllowUnknownTasks: true})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if _, err := c.Enqueue(ctx, "t.A", map[string]int{"n": 1}, queuemax.Opts{}); err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if st, err = queuemax.OpenSQLite(ctx, queuemax.SQLiteOptions{Dir: dir, Layout: tt.want}); err != nil {
			t.Errorf("reopen asking %s: %v", tt.want, err)
		} else {
			st.Close()
		}
		_, err = queuemax.OpenSQLite(ctx, queuemax.SQLiteOptions{Dir: dir, Layout: tt.other})
		if !errors.Is(err, queuemax.ErrLayoutMismatch) || !strings.Contains(err.Error(), dir) {
			t.Errorf("reopen asking %s: err = %v, want ErrLayoutMismatch naming %s", tt.other, err, dir)
		}
	}
}
