package enqueue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// ReadCatalog returns the store's task catalogue, ordered by name
// (queuemax.Client.TaskCatalog).
func ReadCatalog(ctx context.Context, st store.Store) ([]queuemaxtype.CatalogTask, error) {
	recs, err := st.TaskCatalog(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]queuemaxtype.CatalogTask, 0, len(recs))
	for _, r := range recs {
		var t queuemaxtype.CatalogTask
		if err := json.Unmarshal(r.Info, &t); err != nil {
			return nil, fmt.Errorf("queuemax: task catalogue entry %q: %w", r.Name, err)
		}
		t.Name, t.UpdatedAt = r.Name, r.UpdatedAt
		out = append(out, t)
	}
	return out, nil
}

// PublishCatalog writes tasks into the store's task catalogue, each under
// its Name, updated at now (queuemax.Client.PublishTasks, and Run before
// it claims anything). The record's JSON leaves the name and the time to
// the record's columns.
func PublishCatalog(ctx context.Context, st store.Store, tasks []queuemaxtype.CatalogTask, now time.Time) error {
	if len(tasks) == 0 {
		return nil
	}
	recs := make([]store.TaskRecord, 0, len(tasks))
	for _, t := range tasks {
		name := t.Name
		t.Name, t.UpdatedAt = "", time.Time{}
		info, err := json.Marshal(t)
		if err != nil {
			return err
		}
		recs = append(recs, store.TaskRecord{Name: name, Info: info, UpdatedAt: now})
	}
	return st.TaskCatalogPut(ctx, recs)
}
