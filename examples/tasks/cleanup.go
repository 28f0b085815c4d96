package tasks

import (
	"context"
	"fmt"
	"time"
)

// RetentionPeriod is how long CleanupOldData keeps data.
const RetentionPeriod = 30 * 24 * time.Hour

// CleanupOldData deletes data older than RetentionPeriod from the
// context's Retention, every hour.
//
//queuemax:periodic every=1h retries=0
func CleanupOldData(ctx context.Context) error {
	d := depsFrom(ctx)
	if d.Retention == nil {
		return nil
	}
	if _, err := d.Retention.DeleteBefore(ctx, d.Now().Add(-RetentionPeriod)); err != nil {
		return fmt.Errorf("cleanup old data: %w", err)
	}
	return nil
}
