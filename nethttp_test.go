package queuemax

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestMiddleware(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 1})
	h := Middleware(b.c)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := FromContext(r.Context())
		if !ok {
			http.Error(w, "no client", 500)
			return
		}
		id, err := c.Enqueue(r.Context(), "signup", map[string]string{"email": r.FormValue("email")}, Opts{})
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		fmt.Fprint(w, id)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), "POST", "/signup?email=a@example.com", nil))
	if rec.Code != 200 {
		t.Fatalf("POST /signup = %d %s", rec.Code, rec.Body)
	}
	id, err := ParseJobID(rec.Body.String())
	if err != nil {
		t.Fatal(err)
	}
	j, err := b.c.Job(b.ctx, id)
	if err != nil || string(j.Payload) != `{"email":"a@example.com"}` {
		t.Errorf("Job = %+v, %v", j, err)
	}
	if c, ok := FromContext(t.Context()); ok || c != nil {
		t.Errorf("FromContext on a bare context = %v, %v; want nil, false", c, ok)
	}
}

func TestServeWithWorkers(t *testing.T) {
	t.Parallel()
	t.Run("SharedShutdown", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Shards: 1, Handlers: []Handler{adminOKHandler("work")}})
		completed, unsubscribe := b.c.Subscribe(EventCompleted)
		defer unsubscribe()
		inFlight := make(chan struct{})
		finish := make(chan struct{})
		mux := http.NewServeMux()
		mux.HandleFunc("POST /work", func(w http.ResponseWriter, r *http.Request) {
			c, _ := FromContext(r.Context())
			id, err := c.Enqueue(r.Context(), "work", map[string]int{}, Opts{})
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			fmt.Fprint(w, id)
		})
		mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
			close(inFlight)
			<-finish
			fmt.Fprint(w, "done")
		})
		srv := &http.Server{Handler: Middleware(b.c)(mux)}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + ln.Addr().String()
		ctx, cancel := context.WithCancel(b.ctx)
		defer cancel()
		served := make(chan error, 1)
		go func() { served <- ServeListenerWithWorkers(ctx, srv, ln, b.c) }()

		// A job enqueued over HTTP is run by the workers.
		expectCtx, cancelExpect := context.WithTimeout(b.ctx, 10*time.Second)
		defer cancelExpect()
		res, err := http.Post(url+"/work", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		id, err := ParseJobID(string(body))
		if err != nil {
			t.Fatalf("POST /work = %d %q", res.StatusCode, body)
		}
		select {
		case e := <-completed:
			if e.JobID != id {
				t.Errorf("completed job %d, want %d", e.JobID, id)
			}
		case <-expectCtx.Done():
			t.Fatal("job enqueued over HTTP did not complete")
		}

		// Shutdown waits for the request in flight.
		slow := make(chan string, 1)
		go func() {
			res, err := http.Get(url + "/slow")
			if err != nil {
				slow <- err.Error()
				return
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			slow <- string(b)
		}()
		<-inFlight
		cancel()
		select {
		case err := <-served:
			t.Fatalf("ServeListenerWithWorkers returned %v with a request in flight", err)
		default:
		}
		close(finish)
		if got := <-slow; got != "done" {
			t.Errorf("in-flight request got %q, want done", got)
		}
		if err := <-served; err != nil {
			t.Errorf("ServeListenerWithWorkers = %v, want nil", err)
		}
		if ws, ok := b.c.WorkerStats(); !ok || ws.State != WorkerStopped {
			t.Errorf("workers state = %v after return, want stopped", ws.State)
		}
		if _, err := http.Get(url + "/slow"); err == nil {
			t.Error("server still answers after return")
		}
	})
	t.Run("WorkersFailStopsServer", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Shards: 1})
		b.c.Close() // Run fails with ErrClosed
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.NotFoundHandler()}
		err = ServeListenerWithWorkers(b.ctx, srv, ln, b.c)
		if !errors.Is(err, ErrClosed) {
			t.Errorf("ServeListenerWithWorkers = %v, want ErrClosed", err)
		}
		if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			t.Error("listener still open after return")
		}
	})
	t.Run("ServerFailStopsWorkers", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Shards: 1})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ln.Close() // Serve fails at once
		err = ServeListenerWithWorkers(b.ctx, &http.Server{}, ln, b.c)
		if err == nil || !strings.Contains(err.Error(), "http server") {
			t.Errorf("ServeListenerWithWorkers = %v, want the server's error", err)
		}
		if ws, ok := b.c.WorkerStats(); ok && ws.State != WorkerStopped {
			t.Errorf("workers state = %v, want stopped", ws.State)
		}
	})
	t.Run("ListenError", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Shards: 1})
		err := ServeWithWorkers(b.ctx, &http.Server{Addr: "127.0.0.1:-1"}, b.c)
		if err == nil || !strings.Contains(err.Error(), "listen") {
			t.Errorf("ServeWithWorkers = %v, want a listen error", err)
		}
	})
	t.Run("ServeWithWorkers", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Shards: 1})
		ctx, cancel := context.WithCancel(b.ctx)
		cancel() // already over: starts and shuts down cleanly
		if err := ServeWithWorkers(ctx, &http.Server{Addr: "127.0.0.1:0"}, b.c); err != nil {
			t.Errorf("ServeWithWorkers = %v, want nil", err)
		}
	})
}

func adminOKHandler(name string) Handler {
	return Handler{Name: name, Func: func(context.Context, *Job) (any, error) { return nil, nil }}
}

// waitFor polls cond with a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}
