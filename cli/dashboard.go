package cli

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxhttp"
)

// TokenEnv is the environment variable holding the admin token of
// queuemax dashboard (--token-file takes precedence).
const TokenEnv = "QUEUE_MAX_ADMIN_TOKEN"

var dashboardCommand = &command{
	name:    "dashboard",
	args:    "[--addr HOST:PORT] [--token-file FILE] [--protect-reads]",
	summary: "serve the web dashboard and the JSON admin API",
	help: `
Dashboard serves the web dashboard at http://ADDR/ui/ and the JSON admin API
under http://ADDR/ (the endpoints of queuemaxhttp.NewHandler) until SIGINT
or SIGTERM. It runs no workers: it shows the queue that worker processes
fill and drain. The queuemax command also serves Prometheus metrics at
GET /metrics (job counts by shard, task and status, the live workers).

Without an admin token the queue is opened read-only and every action
(retry, requeue, purge, recover) is refused. With a token, from
--token-file or the environment variable QUEUE_MAX_ADMIN_TOKEN, the
dashboard offers the actions to whoever types the token into the page; it
sends it in the Authorization header, never in a cookie, and the server
refuses state-changing requests from other sites' pages.

Job payloads and errors are visible to anyone who can reach ADDR unless
--protect-reads is given (which needs a token). The default address
listens on the loopback interface only.`,
	run: runDashboard,
}

func runDashboard(r *runner, ctx context.Context, cmd *command, args []string) (err error) {
	fs := r.newFlagSet(cmd.name)
	addr := fs.String("addr", "127.0.0.1:8080", "listen on `HOST:PORT` (port 0 picks a free one)")
	tokenFile := fs.String("token-file", "", "read the admin token from `FILE` (default: env "+TokenEnv+")")
	protect := fs.Bool("protect-reads", false, "require the token for reading too")
	if err := r.parse(fs, cmd, args); err != nil {
		return err
	}
	if _, _, err := net.SplitHostPort(*addr); err != nil {
		return usagef("--addr %q: want HOST:PORT such as 127.0.0.1:8080", *addr)
	}
	token := strings.TrimSpace(r.getenv(TokenEnv))
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return fmt.Errorf("--token-file: %w", err)
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return usagef("--token-file %s: the file is empty", *tokenFile)
		}
	}
	if *protect && token == "" {
		return usagef("--protect-reads needs an admin token (--token-file or %s)", TokenEnv)
	}
	mode := readOnly
	if token != "" {
		mode = readWrite
	}
	c, err := r.open(ctx, mode, "", nil)
	if err != nil {
		return err
	}
	defer closeClient(c, &err)

	admin := queuemaxhttp.NewHandler(c, queuemaxhttp.Options{Token: token, ProtectReads: *protect})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, "/ui/", http.StatusFound)
	})
	mux.Handle("/", admin)
	metrics, err := r.dashboardMetrics(c, token, *protect)
	if err != nil {
		return err
	}
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	access := "read-only (no admin token)"
	if token != "" {
		access = "actions need the admin token"
	}
	target := fmt.Sprintf("data dir %s (%d shards)", c.Dir(), c.Shards())
	if c.Dir() == "" {
		target = pgTarget(r.postgres())
	}
	fmt.Fprintf(r.stdout, "dashboard: http://%s/ui/ — %s, %s\n", ln.Addr(), target, access)
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); !*protect && !isLoopback(host) {
		fmt.Fprintf(r.stderr, "%s dashboard: warning: job payloads are readable by anyone reaching %s (use --protect-reads)\n", r.name, ln.Addr())
	}
	fmt.Fprintln(r.stdout, "  SIGINT (Ctrl-C) or SIGTERM stops.")

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http server: %w", err)
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// dashboardMetrics wraps Program.Metrics' handler for GET /metrics: with
// protectReads the scrape needs the admin token as a bearer token. It
// returns nil when the program serves no metrics.
func (r *runner) dashboardMetrics(c *queuemax.Client, token string, protectReads bool) (http.Handler, error) {
	if r.p.Metrics == nil {
		return nil, nil
	}
	h, err := r.p.Metrics(c)
	if err != nil || !protectReads {
		return h, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+token)) != 1 {
			http.Error(w, "queuemax: /metrics needs the admin token (Authorization: Bearer)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}), nil
}
