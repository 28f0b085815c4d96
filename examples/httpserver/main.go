// Command httpserver serves queuemax's admin API next to an application
// endpoint that enqueues jobs, and runs the workers in the same process
// with one graceful shutdown (queuemax.ServeWithWorkers). It listens on a
// loopback address only: the admin API is not meant for the open network.
//
//	go run ./examples/httpserver -token s3cret
//
// Flags:
//
//	-addr   listen address, loopback only (default 127.0.0.1:8080)
//	-dir    data directory (default ./data)
//	-token  admin bearer token (default $QUEUEMAX_ADMIN_TOKEN; empty leaves
//	        the admin API read-only)
//
// Endpoints:
//
//	POST /signup?email=ADDR  enqueues tasks.SendEmail; 202 {"job_id": ...}
//	GET  /outbox             the messages sent so far (an in-memory outbox)
//	/admin/...               the admin API (see queuemaxhttp.NewHandler)
//	GET  /metrics            Prometheus metrics (see package queuemaxprom)
//
// Ctrl-C stops accepting requests, finishes those in flight and drains the
// running jobs.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/examples/tasks"
	"github.com/queuemax/queuemax/queuemaxhttp"
	"github.com/queuemax/queuemax/queuemaxprom"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "127.0.0.1:8080", "listen address (loopback only)")
	flag.StringVar(&cfg.dir, "dir", queuemax.DefaultDir, "data directory")
	flag.StringVar(&cfg.token, "token", os.Getenv("QUEUEMAX_ADMIN_TOKEN"), "admin bearer token")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, cfg, log, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "httpserver:", err)
		os.Exit(1)
	}
}

type config struct {
	addr, dir, token string
}

// errNotLoopback is returned for a listen address that is not loopback.
var errNotLoopback = errors.New("listen address must be a loopback address such as 127.0.0.1:8080")

// run opens the queue, listens on cfg.addr and serves until ctx ends.
func run(ctx context.Context, cfg config, log *slog.Logger, stdout io.Writer) error {
	if err := checkLoopback(cfg.addr); err != nil {
		return err
	}
	col := queuemaxprom.NewCollector(queuemaxprom.Options{})
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: cfg.dir, Handlers: tasks.Handlers(), Logger: log,
		Middleware: []queuemax.JobMiddleware{col}}) // times each job for the histograms
	if err != nil {
		return err
	}
	defer c.Close()
	metrics, err := metricsHandler(c, col)
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if cfg.token == "" {
		log.Warn("no admin token: the admin API is read-only (set -token or QUEUEMAX_ADMIN_TOKEN)")
	}
	return serve(ctx, c, ln, cfg.token, &tasks.Outbox{}, metrics, stdout)
}

// metricsHandler attaches col to c (until c closes) and serves it, with
// the Go runtime's and the process's metrics, in Prometheus's format.
func metricsHandler(c *queuemax.Client, col *queuemaxprom.Collector) (http.Handler, error) {
	col.Attach(c)
	reg := prometheus.NewRegistry()
	if err := reg.Register(col); err != nil {
		return nil, err
	}
	reg.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}

// checkLoopback refuses addresses other hosts could reach.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%q: %w", addr, errNotLoopback)
	}
	return nil
}

// serve runs the HTTP server on ln and the workers until ctx ends; the
// tasks send their email to outbox, and metrics serves /metrics.
func serve(ctx context.Context, c *queuemax.Client, ln net.Listener, token string, outbox *tasks.Outbox, metrics http.Handler, stdout io.Writer) error {
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	srv := &http.Server{
		Handler:           newHandler(c, token, outbox, metrics),
		ReadHeaderTimeout: 5 * time.Second,
	}
	return queuemax.ServeListenerWithWorkers(tasks.WithDeps(ctx, tasks.Deps{Mailer: outbox}), srv, ln, c)
}

// newHandler routes the application and the admin API; the middleware
// gives every handler the queue.
func newHandler(c *queuemax.Client, token string, outbox *tasks.Outbox, metrics http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /signup", signup)
	mux.HandleFunc("GET /outbox", func(w http.ResponseWriter, r *http.Request) {
		type msg struct {
			To      string `json:"to"`
			Subject string `json:"subject"`
		}
		out := []msg{}
		for _, m := range outbox.Messages() {
			out = append(out, msg{m.To, m.Subject})
		}
		writeJSON(w, http.StatusOK, map[string]any{"messages": out})
	})
	mux.Handle("GET /metrics", metrics)
	mux.Handle("/admin/", http.StripPrefix("/admin", queuemaxhttp.NewHandler(c, queuemaxhttp.Options{Token: token})))
	return queuemax.Middleware(c)(mux)
}

// signup enqueues a welcome email through the typed task handle.
func signup(w http.ResponseWriter, r *http.Request) {
	email := r.FormValue("email")
	if email == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "query parameter email: required"})
		return
	}
	c, ok := queuemax.FromContext(r.Context())
	if !ok {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "no queue in the request context"})
		return
	}
	id, err := tasks.New(c).SendEmail.Delay(r.Context(), email, "Welcome!")
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"job_id": id})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
