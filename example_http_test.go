package queuemax_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/examples/tasks"
)

// ExampleNewAdminHandler mounts the admin API under /admin/ and drives it
// over HTTP: reads are open, mutations need the bearer token.
func ExampleNewAdminHandler() {
	ctx := context.Background()
	c, closeClient := openBusExample(ctx, tasks.Handlers()...)
	defer closeClient()

	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", queuemax.NewAdminHandler(c, queuemax.AdminOptions{Token: "s3cret"})))
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
	enqueue := `{"task": "github.com/queuemax/queuemax/examples/tasks.SendEmail",
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

// ExampleMiddleware enqueues a typed task from an HTTP handler: the
// middleware puts the client into the request context.
func ExampleMiddleware() {
	ctx := context.Background()
	c, closeClient := openBusExample(ctx, tasks.Handlers()...)
	defer closeClient()

	signup := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := queuemax.FromContext(r.Context())
		if !ok {
			http.Error(w, "no queue", http.StatusInternalServerError)
			return
		}
		if _, err := tasks.New(c).SendEmail.Delay(r.Context(), r.FormValue("email"), "Welcome"); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	h := queuemax.Middleware(c)(signup)

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/signup?email=ada@example.com", nil))
	st, _ := tasks.New(c).SendEmail.Stats(ctx)
	fmt.Println(rec.Code, "pending:", st.Pending)
	// Output:
	// 202 pending: 1
}

// ExampleServeListenerWithWorkers serves HTTP and runs the workers with
// one shutdown: cancelling the context stops both.
func ExampleServeListenerWithWorkers() {
	ctx := context.Background()
	outbox := &tasks.Outbox{}
	c, closeClient := openBusExample(ctx, tasks.Handlers()...)
	defer closeClient()
	completed, unsubscribe := c.Subscribe(queuemax.EventCompleted)
	defer unsubscribe()

	mux := http.NewServeMux()
	mux.HandleFunc("POST /signup", func(w http.ResponseWriter, r *http.Request) {
		c, _ := queuemax.FromContext(r.Context())
		id, err := tasks.New(c).SendEmail.Delay(r.Context(), r.FormValue("email"), "Welcome")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, id)
	})
	srv := &http.Server{Handler: queuemax.Middleware(c)(mux), ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}

	runCtx, stop := context.WithCancel(tasks.WithDeps(ctx, tasks.Deps{Mailer: outbox}))
	served := make(chan error)
	go func() { served <- queuemax.ServeListenerWithWorkers(runCtx, srv, ln, c) }()

	// Sign up over HTTP and wait until the welcome email's job completed.
	sendEmail := tasks.New(c).SendEmail.Name()
	err = httpPost("http://" + ln.Addr().String() + "/signup?email=ada@example.com")
	if err == nil {
		_, err = awaitEvent(ctx, completed, func(e *queuemax.Event) bool { return e.Task == sendEmail })
	}
	stop()
	fmt.Println("served:", <-served)
	if err != nil {
		fmt.Println(err)
	}
	for _, m := range outbox.Messages() {
		fmt.Println("sent:", m.To, m.Subject)
	}
	// Output:
	// served: <nil>
	// sent: ada@example.com Welcome
}

func httpPost(url string) error {
	res, err := http.Post(url, "", nil)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	return err
}
