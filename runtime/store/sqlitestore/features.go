package sqlitestore

import (
	"context"
	"fmt"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// Features: the SQLite store has none of the optional capabilities. Its
// shard files are queuemax's own (no application transaction spans them),
// workers learn of other processes' commits by polling DataVersion, and
// times follow the callers' clocks.
func (s *Store) Features() store.Features { return store.Features{} }

// InsertTx returns an error wrapping store.ErrUnsupported.
func (s *Store) InsertTx(context.Context, any, []store.InsertParams) ([]store.JobID, error) {
	return nil, fmt.Errorf("sqlitestore: transactional insert: %w", store.ErrUnsupported)
}

// InsertWorkflowTx returns an error wrapping store.ErrUnsupported.
func (s *Store) InsertWorkflowTx(context.Context, any, *store.WorkflowParams) (int64, []store.JobID, error) {
	return 0, nil, fmt.Errorf("sqlitestore: transactional workflow insert: %w", store.ErrUnsupported)
}

// Changes returns nil: commits are found by polling DataVersion.
func (s *Store) Changes() <-chan struct{} { return nil }

// Now returns an error wrapping store.ErrUnsupported: times follow the
// callers' clocks.
func (s *Store) Now(context.Context) (time.Time, error) {
	return time.Time{}, fmt.Errorf("sqlitestore: database clock: %w", store.ErrUnsupported)
}
