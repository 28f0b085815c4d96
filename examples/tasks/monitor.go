package tasks

import (
	"context"
	"fmt"
	"net/http"
)

// PingMonitor tells the monitoring service at the context's
// Deps.MonitorURL that the workers are alive, every two seconds; if the
// pings stop, the service raises the alarm. A missed ping is not worth a
// retry: the next one is two seconds away.
//
//queuemax:periodic every=2s retries=0 timeout=1s
func PingMonitor(ctx context.Context) error {
	d := depsFrom(ctx)
	if d.MonitorURL == "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.MonitorURL, nil)
	if err != nil {
		return err
	}
	resp, err := d.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("ping monitor: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return &StatusError{URL: d.MonitorURL, Code: resp.StatusCode}
	}
	return nil
}
