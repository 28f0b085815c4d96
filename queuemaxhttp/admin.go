package queuemaxhttp

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/queuemax/queuemax"
)

// DefaultMaxBodyBytes is the request body limit of the admin API when
// Options.MaxBodyBytes is zero.
const DefaultMaxBodyBytes = 1 << 20

// Options configure NewHandler.
type Options struct {
	// Token is the bearer token that mutating requests (POST) must send as
	// "Authorization: Bearer <Token>". Empty means no token is configured:
	// every mutating request is refused with 403 Forbidden.
	Token string
	// ProtectReads makes read requests (GET) need the token too; with no
	// token configured they are then refused as well. Job listings show
	// payloads and errors, which may be sensitive.
	ProtectReads bool
	// MaxBodyBytes limits request bodies; a larger body is refused with 413.
	// Zero means 1 MiB.
	MaxBodyBytes int64
	// Logger receives internal errors (answered with 500). Nil means the
	// client's logger.
	Logger *slog.Logger
	// TrustedOrigins lists origins (such as "https://ops.example.com")
	// allowed to send state-changing requests from a browser although
	// they differ from the handler's own, e.g. behind a proxy that
	// rewrites the Host header. See NewHandler on cross-site requests.
	TrustedOrigins []string
}

// NewHandler returns an http.Handler serving a JSON admin API over c.
// Paths are relative to where it is mounted: under a prefix, strip it with
// http.StripPrefix, e.g.
//
//	mux.Handle("/admin/", http.StripPrefix("/admin", NewHandler(c, opts)))
//
// It is a plain http.Handler, so routers that leave the URL path alone when
// mounting take the same StripPrefix (chi: r.Mount("/admin",
// http.StripPrefix("/admin", h))).
//
// Endpoints:
//
//	GET  /stats                              Stats, plus "worker" (WorkerStats) while Run is active,
//	                                         and "error" when a shard could not be read
//	GET  /health                             Client.Health: {"status": "ok"|"degraded"|"unhealthy",
//	                                         "problems": [...], "degraded": [{"task", "breaker", ...}]};
//	                                         200, or 503 when unhealthy (an open breaker is degraded: 200)
//	GET  /readyz                             readiness probe: 200 when the store answers and this process's
//	                                         workers are not draining, else 503 (no token needed)
//	GET  /livez                              liveness probe: 200 while the process serves (no token needed)
//	GET  /jobs?status=&task=&tag=&shard=&q=&limit= {"jobs": [...]}, newest first; limit 1–1000, default 100;
//	                                         tag keeps jobs with that tag (completed jobs stay listed for
//	                                         Config.CompletedRetention);
//	                                         q keeps jobs whose id, task, payload, error or worker contain it
//	                                         (searching the newest 1000 jobs that match the other filters)
//	GET  /jobs/{id}                          one job, with its error stack and metadata (and workflow_id for
//	                                         a workflow step's job, steps for a job that recorded job
//	                                         steps); id is a JobID or "shard:seq"
//	GET  /dead-letters?task=&shard=&limit=   {"dead_letters": [...]}
//	GET  /periodic                           {"periodic": [PeriodicInfo...]}
//	GET  /tasks                              {"tasks": [...]}: counts per task by status and shard
//	GET  /throughput                         completed, failed and retried jobs per 5s step, last 10 minutes
//	GET  /workers                            {"workers": [WorkerInfo...]}: the live worker registry
//	GET  /breakers                           {"breakers": [...]}: the tasks' circuit breakers as stored (shared by every process)
//	GET  /queues                             {"queues": [QueueInfo...]}: counts, paused state and limits per queue
//	GET  /workflows?status=&name=&limit=&before= {"workflows": [...], "next_before": id}: newest first,
//	                                         without steps; limit 1–1000, default 100; next_before
//	                                         (set when the page is full) is the before of the next page
//	GET  /workflows/{id}                     one workflow with its steps: status, after, after_settled,
//	                                         binds, job_id, reason
//	GET  /info                               what the dashboard may offer (read_only, protect_reads, shards)
//	GET  /ui/                                the dashboard, a web page over these endpoints (its
//	                                         assets need no token; with ProtectReads its data does)
//	POST /retry[?shard=N]                    re-queue failed jobs: {"retried": n}
//	POST /jobs/{id}/retry                    re-queue one failed job
//	POST /jobs/{id}/cancel                   cancel a job: {"job_id": id, "status": "cancelled"}
//	                                         ("processing": its worker stops it within a
//	                                         heartbeat); 409 if it already finished
//	POST /workflows/{id}/cancel              cancel every step not ended (running ones through their
//	                                         context): the workflow as GET answers it; 409 if it finished
//	POST /workflows/{id}/retry               run a failed or cancelled workflow's steps that did not
//	                                         complete again: the workflow as GET answers it; 409 if it
//	                                         is running or completed
//	POST /queues/{name}/pause                pause a queue on every worker: {"queue": name, "paused": true}
//	POST /queues/{name}/resume               resume it: {"queue": name, "paused": false}
//	POST /queues/{name}/limits {"rate": 50, "per": "1s", "concurrency": 4}
//	                                         set the queue's global limits (every process, from its
//	                                         next claim; {} clears them): {"queue": name, "limits": {...}}
//	POST /dead-letters/{shard}/{id}/requeue  re-queue a dead letter: {"job_id": id}
//	POST /purge    {"statuses": ["failed", ...]}    {"purged": n}
//	POST /recover                            recover orphans: {"requeued": n, "dead_lettered": n}
//	POST /enqueue  {"task": "...", "payload": {...}, "opts": {"priority": 2,
//	               "max_retries": 0, "key": 7, "run_at": "RFC 3339", "delay": "10s",
//	               "timeout": "30s", "tags": ["a"], "metadata": {...}, "queue": "emails",
//	               "unique_key": "...", "allow_unknown_task": false}}
//	                                         201 {"job_id": id, "shard": n, "task": name as stored}; 200 {"job_id": id,
//	                                         "shard": n, "duplicate": true} when the job is unique
//	                                         and the stored job id holds its key (nothing stored)
//
// POST requests need the bearer token (401 without a valid one, 403 when
// none is configured); the token is compared in constant time. Against
// cross-site request forgery, the token travels only in the Authorization
// header (a browser never adds a Bearer token by itself, unlike a cookie) and a POST
// that a browser marks as cross-origin (Sec-Fetch-Site, or an Origin whose
// host differs from Host; see http.CrossOriginProtection) is refused with
// 403 before the token is looked at; Options.TrustedOrigins admits
// named origins. The dashboard under ui/ sends its requests with fetch,
// keeping the token the operator types in the tab's sessionStorage. Bodies must
// be JSON (415 otherwise), at most Options.MaxBodyBytes (413), with no
// unknown fields (400). Errors are JSON objects {"error": "..."}: 400 names
// the bad parameter or field, 404 an unknown job or path, 405 a wrong
// method (with an Allow header). /enqueue checks like Client.Enqueue: the
// task must be one of c's handlers or a task of the store's task catalogue
// (the tasks workers ran, kept after they stop), by its name, an alias or
// a short name that matches one; an ambiguous or unknown name is 400
// listing the near matches unless "allow_unknown_task" (or
// Config.AllowUnknownTasks) is set. The payload of a registered task must
// fit its parameters (400 naming the field; nothing is stored).
func NewHandler(c *queuemax.Client, opts Options) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.Logger == nil {
		opts.Logger = c.Logger()
	}
	a := &admin{c: c, opts: opts, csrf: http.NewCrossOriginProtection()}
	for _, o := range opts.TrustedOrigins {
		if err := a.csrf.AddTrustedOrigin(o); err != nil {
			panic(fmt.Sprintf("queuemax: Options.TrustedOrigins: %v", err))
		}
	}
	if opts.Token != "" {
		sum := sha256.Sum256([]byte(opts.Token))
		a.tokenSum = sum[:]
	}
	a.routes = []route{
		{"GET", "stats", a.stats},
		{"GET", "health", a.health}, // health.go
		{"GET", "readyz", a.readyz},
		{"GET", "livez", a.livez},
		{"GET", "jobs", a.jobs},
		{"GET", "jobs/{}", a.job},
		{"GET", "dead-letters", a.deadLetters},
		{"GET", "periodic", a.periodic},
		{"GET", "info", a.info},
		{"GET", "tasks", a.tasks},
		{"GET", "throughput", a.throughput},
		{"GET", "workers", a.workers},
		{"GET", "breakers", a.breakers},
		{"GET", "queues", a.queues},
		{"GET", "workflows", a.workflows},
		{"GET", "workflows/{}", a.workflow},
		{"POST", "workflows/{}/cancel", a.cancelWorkflow},
		{"POST", "workflows/{}/retry", a.retryWorkflow},
		{"POST", "queues/{}/pause", a.pauseQueue},
		{"POST", "queues/{}/resume", a.resumeQueue},
		{"POST", "queues/{}/limits", a.queueLimits}, // queues_limit.go
		{"POST", "retry", a.retryAll},
		{"POST", "jobs/{}/retry", a.retryJob},
		{"POST", "jobs/{}/cancel", a.cancelJob},
		{"POST", "dead-letters/{}/{}/requeue", a.requeue},
		{"POST", "purge", a.purge},
		{"POST", "recover", a.recover},
		{"POST", "enqueue", a.enqueue},
	}
	return a
}

type admin struct {
	c        *queuemax.Client
	opts     Options
	tokenSum []byte // SHA-256 of the token; nil when none is configured
	routes   []route
	csrf     *http.CrossOriginProtection

	tp         throughput // the dashboard's throughput samples
	tasksMu    sync.Mutex
	tasksAt    time.Time
	tasksCache []adminTask
}

type route struct {
	method  string
	pattern string // segments separated by "/"; "{}" matches one segment
	serve   func(w http.ResponseWriter, r *http.Request, args []string) error
}

// match reports whether path's segments fit the route's pattern and returns
// the segments that matched "{}".
func (rt route) match(segs []string) ([]string, bool) {
	pat := strings.Split(rt.pattern, "/")
	if len(pat) != len(segs) {
		return nil, false
	}
	var args []string
	for i, p := range pat {
		switch {
		case p == "{}" && segs[i] != "":
			args = append(args, segs[i])
		case p != segs[i]:
			return nil, false
		}
	}
	return args, true
}

// httpError is an error with the status to answer it with.
type httpError struct {
	status int
	msg    string
}

// Error returns the message sent to the client.
func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// ServeHTTP routes r, checks its token and answers it.
func (a *admin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if segs[0] == "ui" {
		a.serveUI(w, r)
		return
	}
	var allow []string
	for _, rt := range a.routes {
		args, ok := rt.match(segs)
		if !ok {
			continue
		}
		if rt.method != r.Method && !(rt.method == http.MethodGet && r.Method == http.MethodHead) {
			allow = append(allow, rt.method)
			continue
		}
		if rt.method != http.MethodGet && a.csrf.Check(r) != nil {
			a.fail(w, r, &httpError{http.StatusForbidden, errCrossOrigin.Error()})
			return
		}
		if probe := rt.pattern == "readyz" || rt.pattern == "livez"; !probe {
			if err := a.authorize(r, rt.method != http.MethodGet); err != nil {
				a.fail(w, r, err)
				return
			}
		}
		if err := rt.serve(w, r, args); err != nil {
			a.fail(w, r, err)
		}
		return
	}
	if len(allow) > 0 {
		if slices.Contains(allow, http.MethodGet) {
			allow = append(allow, http.MethodHead)
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		a.fail(w, r, &httpError{http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed (allowed: %s)", r.Method, strings.Join(allow, ", "))})
		return
	}
	a.fail(w, r, &httpError{http.StatusNotFound, fmt.Sprintf("no admin endpoint %q", r.URL.Path)})
}

// authorize checks the bearer token of a mutating request, or of a read
// when reads are protected.
func (a *admin) authorize(r *http.Request, mutating bool) error {
	if !mutating && !a.opts.ProtectReads {
		return nil
	}
	if a.tokenSum == nil {
		return &httpError{http.StatusForbidden, "admin API is read-only: no token configured (Options.Token)"}
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return &httpError{http.StatusUnauthorized, "missing bearer token (Authorization: Bearer <token>)"}
	}
	// Hashing first makes the comparison constant-time in the length too.
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	if subtle.ConstantTimeCompare(sum[:], a.tokenSum) != 1 {
		return &httpError{http.StatusUnauthorized, "invalid bearer token"}
	}
	return nil
}

// fail answers err as JSON with the status it maps to.
func (a *admin) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := http.StatusInternalServerError, "internal error"
	var he *httpError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &he):
		status, msg = he.status, he.msg
	case errors.As(err, &mbe):
		status, msg = http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit)
	case errors.Is(err, queuemax.ErrJobNotFound), errors.Is(err, queuemax.ErrWorkflowNotFound):
		status, msg = http.StatusNotFound, err.Error()
	case errors.Is(err, queuemax.ErrJobFinished):
		status, msg = http.StatusConflict, err.Error()
	case errors.Is(err, queuemax.ErrInvalidPayload), errors.Is(err, queuemax.ErrInvalidPriority), errors.Is(err, queuemax.ErrInvalidRetries),
		errors.Is(err, queuemax.ErrInvalidShard), errors.Is(err, queuemax.ErrUnknownTask), errors.Is(err, queuemax.ErrInvalidTag), errors.Is(err, queuemax.ErrInvalidTimeout),
		errors.Is(err, queuemax.ErrInvalidQueue), errors.Is(err, queuemax.ErrUnknownQueue),
		errors.Is(err, queuemax.ErrInvalidUnique), errors.Is(err, queuemax.ErrInvalidLimit):
		status, msg = http.StatusBadRequest, err.Error()
	case errors.Is(err, queuemax.ErrReadOnly):
		status, msg = http.StatusForbidden, err.Error()
	case errors.Is(err, queuemax.ErrClosed):
		status, msg = http.StatusServiceUnavailable, err.Error()
	case r.Context().Err() != nil:
		status, msg = http.StatusServiceUnavailable, "request cancelled"
	default:
		a.opts.Logger.ErrorContext(r.Context(), "admin request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="queuemax"`)
	}
	writeJSON(w, status, map[string]string{"error": msg})
}

// writeJSON answers v as indented JSON. A failed write means the client
// went away; with the status sent, there is nothing left to tell it.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// reply answers v with status; it returns nil so that handlers can end
// with it.
func reply(w http.ResponseWriter, status int, v any) error {
	writeJSON(w, status, v)
	return nil
}

// decode reads r's JSON body into v: one JSON value, no unknown fields,
// within the size limit.
func (a *admin) decode(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return &httpError{http.StatusUnsupportedMediaType, fmt.Sprintf("content type %q: send a JSON body with Content-Type: application/json", ct)}
		}
	}
	if r.ContentLength > a.opts.MaxBodyBytes {
		return &http.MaxBytesError{Limit: a.opts.MaxBodyBytes}
	}
	body := http.MaxBytesReader(w, r.Body, a.opts.MaxBodyBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &mbe):
			return err
		case errors.Is(err, io.EOF):
			return badRequest("request body: empty, want a JSON object")
		case errors.As(err, &se):
			return badRequest("request body: malformed JSON at byte %d: %v", se.Offset, se)
		case errors.As(err, &te) && te.Field != "":
			return badRequest("request body: field %q: want %s, got JSON %s", te.Field, te.Type, te.Value)
		default:
			return badRequest("request body: %v", err)
		}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return badRequest("request body: unexpected data after the JSON object")
	}
	return nil
}

// queryInt parses an optional integer query parameter within [lo, hi].
func queryInt(r *http.Request, name string, lo, hi int) (n int, set bool, err error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, false, nil
	}
	n, err = strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, false, badRequest("query parameter %s: want an integer from %d to %d, got %q", name, lo, hi, v)
	}
	return n, true, nil
}

// listParams reads status, task, shard and limit.
func (a *admin) listParams(r *http.Request, withStatus bool) (queuemax.ListParams, error) {
	var p queuemax.ListParams
	for name := range r.URL.Query() {
		switch name {
		case "task", "shard", "limit":
		case "status", "q", "tag":
			if withStatus {
				continue
			}
			fallthrough
		default:
			return p, badRequest("unknown query parameter %q", name)
		}
	}
	if s := r.URL.Query().Get("status"); s != "" {
		st, err := queuemax.ParseStatus(s)
		if err != nil {
			return p, badRequest("query parameter status: %v", err)
		}
		p.Status = st
	}
	p.Task = r.URL.Query().Get("task")
	p.Tag = r.URL.Query().Get("tag")
	sh, ok, err := queryInt(r, "shard", 0, a.c.Shards()-1)
	if err != nil {
		return p, err
	}
	if ok {
		p.Shard = &sh
	}
	limit, ok, err := queryInt(r, "limit", 1, 1000)
	if err != nil {
		return p, err
	}
	if ok {
		p.Limit = limit
	}
	return p, nil
}
