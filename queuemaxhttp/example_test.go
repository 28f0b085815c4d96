package queuemaxhttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/examples/tasks"
	"github.com/queuemax/queuemax/queuemaxhttp"
)

// ExampleNewHandler mounts the admin API under /admin/ and drives it
// over HTTP: reads are open, mutations need the bearer token.
func ExampleNewHandler() {
	ctx := context.Background()
	c, closeClient := openExample(ctx, tasks.Handlers()...)
	defer closeClient()

	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", queuemaxhttp.NewHandler(c, queuemaxhttp.Options{Token: "s3cret"})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	call := func(method, path, token, body string) {
		req, _ := http.NewRequestWithContext(ctx, method, srv.URL+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer res.Body.Close()
		var out map[string]any
		json.NewDecoder(res.Body).Decode(&out)
		fmt.Println(res.StatusCode, out["error"], out["job_id"], out["pending"], out["retried"])
	}
	enqueue := `{"task": "tasks.SendEmail",
		"payload": {"to": "ada@example.com", "subject": "hi"}, "opts": {"priority": 2}}`
	call("POST", "/admin/enqueue", "", enqueue)
	call("POST", "/admin/enqueue", "wrong", enqueue)
	call("POST", "/admin/enqueue", "s3cret", enqueue)
	call("GET", "/admin/stats", "", "")
	call("POST", "/admin/retry", "s3cret", "")
	call("DELETE", "/admin/stats", "", "")
	// Output:
	// 401 missing bearer token (Authorization: Bearer <token>) <nil> <nil> <nil>
	// 401 invalid bearer token <nil> <nil> <nil>
	// 201 <nil> 1024 <nil> <nil>
	// 200 <nil> <nil> 1 <nil>
	// 200 <nil> <nil> <nil> 0
	// 405 method DELETE not allowed (allowed: GET, HEAD) <nil> <nil> <nil>
}

// openExample opens a client on a fresh temporary directory.
func openExample(ctx context.Context, handlers ...queuemax.Handler) (c *queuemax.Client, close func()) {
	dir, err := os.MkdirTemp("", "queuemaxhttp-example")
	if err != nil {
		panic(err)
	}
	c, err = queuemax.Open(ctx, queuemax.Config{Dir: dir, Shards: 1, Handlers: handlers,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	return c, func() { c.Close(); os.RemoveAll(dir) }
}
