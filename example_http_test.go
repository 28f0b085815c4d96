package queuemax_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/examples/tasks"
)

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
