package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/queuemax/queuemax"
)

// StatusError is the error of a webhook that answered with a status other
// than 2xx.
type StatusError struct {
	URL  string
	Code int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("webhook %s: %d %s", e.URL, e.Code, http.StatusText(e.Code))
}

// StatusCode returns the HTTP status.
func (e *StatusError) StatusCode() int { return e.Code }

// Temporary reports whether a later attempt may succeed: 408, 429 and 5xx.
func (e *StatusError) Temporary() bool {
	return e.Code == http.StatusRequestTimeout || e.Code == http.StatusTooManyRequests || e.Code >= 500
}

// CallWebhook POSTs body as a JSON object to url with the HTTP client of
// the context's Deps. A 2xx answer completes the job. A temporary status
// (408, 429, 5xx) fails the attempt so the job is retried, after the
// Retry-After delay when the server sends one; any other status fails the
// job for good. Connection errors and truncated answers are first retried
// in the worker, twice.
//
//queuemax:task retries=3 timeout=10s rate_limit=10/s retry_on=io.ErrUnexpectedEOF,*net.OpError inline_retries=2
func CallWebhook(ctx context.Context, url string, body map[string]string) error {
	payload, err := json.Marshal(body)
	if err != nil {
		return queuemax.Permanent(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return queuemax.Permanent(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := depsFrom(ctx).HTTP.Do(req)
	if err != nil {
		if opErr := (*net.OpError)(nil); errors.As(err, &opErr) {
			return fmt.Errorf("webhook %s: %s: %w", url, opErr.Op, err)
		}
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)); err != nil {
		return err
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	serr := &StatusError{URL: url, Code: resp.StatusCode}
	if !serr.Temporary() {
		return queuemax.Permanent(serr)
	}
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		return queuemax.RetryAfter(time.Duration(secs)*time.Second, serr)
	}
	return serr
}
