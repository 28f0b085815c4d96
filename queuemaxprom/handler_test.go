package queuemaxprom_test

import (
	"context"
	"io"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxprom"
	"github.com/queuemax/queuemax/queuemaxtest"
)

// TestHandler: the handler serves the stored job counts in the text
// format, from a registry of its own (two handlers on one process do not
// collide).
func TestHandler(t *testing.T) {
	t.Parallel()
	nop := func(context.Context, *queuemax.Job) (any, error) { return nil, nil }
	c := queuemaxtest.NewClient(t, queuemax.Config{Shards: 1, Handlers: []queuemax.Handler{{Name: "t.mail", Func: nop}}})
	if _, err := c.Enqueue(t.Context(), "t.mail", map[string]int{}, queuemax.Opts{}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		h, err := queuemaxprom.Handler(c)
		if err != nil {
			t.Fatalf("Handler: %v", err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), "GET", "/metrics", nil))
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != 200 || !regexp.MustCompile(`(?m)^queuemax_jobs\{shard="0",status="pending",task="t.mail"\} 1$`).Match(body) {
			t.Errorf("GET /metrics = %d, want the pending t.mail job:\n%s", rec.Code, body)
		}
	}
}
