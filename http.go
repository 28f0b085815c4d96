package queuemax

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

type clientKey struct{}

// NewContext returns a copy of ctx that carries c; FromContext gets it back.
func NewContext(ctx context.Context, c *Client) context.Context {
	return context.WithValue(ctx, clientKey{}, c)
}

// FromContext returns the Client that Middleware or NewContext put into
// ctx, and false if there is none. Handlers bind typed task handles to it
// with the generated New: tasks.New(c).SendEmail.Delay(ctx, …).
func FromContext(ctx context.Context) (*Client, bool) {
	c, ok := ctx.Value(clientKey{}).(*Client)
	return c, ok && c != nil
}

// Middleware returns net/http middleware that puts c into every request's
// context, for FromContext.
func Middleware(c *Client) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(NewContext(r.Context(), c)))
		})
	}
}

// DefaultAdminMaxBodyBytes is the request body limit of the admin API when
// AdminOptions.MaxBodyBytes is zero.
const DefaultAdminMaxBodyBytes = 1 << 20

// AdminOptions configure NewAdminHandler.
type AdminOptions struct {
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
	// rewrites the Host header. See NewAdminHandler on cross-site requests.
	TrustedOrigins []string
}

// NewAdminHandler returns an http.Handler serving a JSON admin API over c.
// Paths are relative to where it is mounted: under a prefix, strip it with
// http.StripPrefix, e.g.
//
//	mux.Handle("/admin/", http.StripPrefix("/admin", queuemax.NewAdminHandler(c, opts)))
//
// It is a plain http.Handler, so routers that leave the URL path alone when
// mounting take the same StripPrefix (chi: r.Mount("/admin",
// http.StripPrefix("/admin", h))).
//
// Endpoints:
//
//	GET  /stats                              Stats, plus "worker" (WorkerStats) while Run is active,
//	                                         and "error" when a shard could not be read
//	GET  /jobs?status=&task=&tag=&shard=&q=&limit= {"jobs": [...]}, newest first; limit 1–1000, default 100;
//	                                         tag keeps jobs with that tag (completed jobs stay listed for
//	                                         Config.CompletedRetention);
//	                                         q keeps jobs whose id, task, payload, error or worker contain it
//	                                         (searching the newest 1000 jobs that match the other filters)
//	GET  /jobs/{id}                          one job, with its error stack and metadata; id is a JobID or "shard:seq"
//	GET  /dead-letters?task=&shard=&limit=   {"dead_letters": [...]}
//	GET  /periodic                           {"periodic": [PeriodicInfo...]}
//	GET  /tasks                              {"tasks": [...]}: counts per task by status and shard
//	GET  /throughput                         completed, failed and retried jobs per 5s step, last 10 minutes
//	GET  /workers                            {"workers": [WorkerInfo...]}: the live worker registry
//	GET  /breakers                           {"breakers": [...]}: the task circuit breakers of a running worker
//	GET  /info                               what the dashboard may offer (read_only, protect_reads, shards)
//	GET  /ui/                                the dashboard, a web page over these endpoints (its
//	                                         assets need no token; with ProtectReads its data does)
//	POST /retry[?shard=N]                    re-queue failed jobs: {"retried": n}
//	POST /jobs/{id}/retry                    re-queue one failed job
//	POST /jobs/{id}/cancel                   cancel a job: {"job_id": id, "status": "cancelled"}
//	                                         ("processing": its worker stops it within a
//	                                         heartbeat); 409 if it already finished
//	POST /dead-letters/{shard}/{id}/requeue  re-queue a dead letter: {"job_id": id}
//	POST /purge    {"statuses": ["failed", ...]}    {"purged": n}
//	POST /recover                            recover orphans: {"requeued": n, "dead_lettered": n}
//	POST /enqueue  {"task": "...", "payload": {...}, "opts": {"priority": 2,
//	               "max_retries": 0, "key": 7, "run_at": "RFC 3339", "delay": "10s",
//	               "timeout": "30s", "tags": ["a"], "metadata": {...}}}
//	                                         201 {"job_id": id, "shard": n}
//
// POST requests need the bearer token (401 without a valid one, 403 when
// none is configured); the token is compared in constant time. Against
// cross-site request forgery, the token travels only in the Authorization
// header (a browser never adds a Bearer token by itself, unlike a cookie) and a POST
// that a browser marks as cross-origin (Sec-Fetch-Site, or an Origin whose
// host differs from Host; see http.CrossOriginProtection) is refused with
// 403 before the token is looked at; AdminOptions.TrustedOrigins admits
// named origins. The dashboard under ui/ sends its requests with fetch,
// keeping the token the operator types in the tab's sessionStorage. Bodies must
// be JSON (415 otherwise), at most AdminOptions.MaxBodyBytes (413), with no
// unknown fields (400). Errors are JSON objects {"error": "..."}: 400 names
// the bad parameter or field, 404 an unknown job or path, 405 a wrong
// method (with an Allow header). /enqueue checks like Client.Enqueue: when
// c has handlers (and no catch-all one) the task must be one of theirs (a
// short name is resolved) unless Config.AllowUnknownTasks is set, and the
// payload of a registered task must fit its parameters (400 naming the
// field; nothing is stored).
func NewAdminHandler(c *Client, opts AdminOptions) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultAdminMaxBodyBytes
	}
	if opts.Logger == nil {
		opts.Logger = c.log
	}
	a := &admin{c: c, opts: opts, csrf: http.NewCrossOriginProtection()}
	for _, o := range opts.TrustedOrigins {
		if err := a.csrf.AddTrustedOrigin(o); err != nil {
			panic(fmt.Sprintf("queuemax: AdminOptions.TrustedOrigins: %v", err))
		}
	}
	if opts.Token != "" {
		sum := sha256.Sum256([]byte(opts.Token))
		a.tokenSum = sum[:]
	}
	a.routes = []route{
		{"GET", "stats", a.stats},
		{"GET", "jobs", a.jobs},
		{"GET", "jobs/{}", a.job},
		{"GET", "dead-letters", a.deadLetters},
		{"GET", "periodic", a.periodic},
		{"GET", "info", a.info},
		{"GET", "tasks", a.tasks},
		{"GET", "throughput", a.throughput},
		{"GET", "workers", a.workers},
		{"GET", "breakers", a.breakers},
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
	c        *Client
	opts     AdminOptions
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
		if err := a.authorize(r, rt.method != http.MethodGet); err != nil {
			a.fail(w, r, err)
			return
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
		return &httpError{http.StatusForbidden, "admin API is read-only: no token configured (AdminOptions.Token)"}
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
	case errors.Is(err, ErrJobNotFound):
		status, msg = http.StatusNotFound, err.Error()
	case errors.Is(err, ErrJobFinished):
		status, msg = http.StatusConflict, err.Error()
	case errors.Is(err, ErrInvalidPayload), errors.Is(err, ErrInvalidPriority), errors.Is(err, ErrInvalidRetries),
		errors.Is(err, ErrInvalidShard), errors.Is(err, ErrUnknownTask), errors.Is(err, ErrInvalidTag), errors.Is(err, ErrInvalidTimeout):
		status, msg = http.StatusBadRequest, err.Error()
	case errors.Is(err, ErrReadOnly):
		status, msg = http.StatusForbidden, err.Error()
	case errors.Is(err, ErrClosed):
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
func (a *admin) listParams(r *http.Request, withStatus bool) (ListParams, error) {
	var p ListParams
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
		st, err := ParseStatus(s)
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

// adminJob is a job as the admin API shows it.
type adminJob struct {
	ID          JobID           `json:"id"`
	Shard       int             `json:"shard"`
	Task        string          `json:"task"`
	Status      Status          `json:"status"`
	Priority    Priority        `json:"priority"`
	Payload     json.RawMessage `json:"payload"`
	Key         *int64          `json:"key,omitempty"`
	Attempts    int             `json:"attempts"`
	MaxAttempts int             `json:"max_attempts"`
	LastError   string          `json:"last_error,omitempty"`
	ErrorType   string          `json:"error_type,omitempty"`
	WorkerID    string          `json:"worker_id,omitempty"`
	Result      json.RawMessage `json:"result,omitempty"`
	CreatedAt   *time.Time      `json:"created_at,omitempty"`
	StartedAt   *time.Time      `json:"started_at,omitempty"`
	CompletedAt *time.Time      `json:"completed_at,omitempty"`
	NextRunAt   *time.Time      `json:"next_run_at,omitempty"`
	Heartbeat   *time.Time      `json:"heartbeat,omitempty"`
	// CancelRequested: Cancel was called while the job runs.
	CancelRequested bool `json:"cancel_requested,omitempty"`
	Snoozes         int  `json:"snoozes"`
	// TimeoutMS is the job's own timeout (Opts.Timeout), if any.
	TimeoutMS int64    `json:"timeout_ms,omitempty"`
	Tags      []string `json:"tags,omitempty"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func toAdminJob(j *Job) adminJob {
	return adminJob{ID: j.ID, Shard: j.Shard, Task: j.Task, Status: j.Status, Priority: j.Priority, Payload: j.Payload,
		Key: j.PartitionKey, Attempts: j.Attempts, MaxAttempts: j.MaxAttempts, LastError: j.LastError, ErrorType: j.ErrorType,
		WorkerID: j.WorkerID, Result: j.Result, CreatedAt: timePtr(j.CreatedAt), StartedAt: timePtr(j.StartedAt),
		CompletedAt: timePtr(j.CompletedAt), NextRunAt: timePtr(j.NextRetryAt), Heartbeat: timePtr(j.Heartbeat),
		CancelRequested: j.CancelRequested, Snoozes: j.Snoozes, TimeoutMS: j.Timeout.Milliseconds(), Tags: j.Tags}
}

type adminDeadLetter struct {
	ID            int64           `json:"id"`
	Shard         int             `json:"shard"`
	OriginalJobID JobID           `json:"original_job_id,omitempty"`
	Task          string          `json:"task"`
	Payload       json.RawMessage `json:"payload"`
	Error         string          `json:"error"`
	ErrorType     string          `json:"error_type,omitempty"`
	Attempts      int             `json:"attempts"`
	FailedAt      *time.Time      `json:"failed_at,omitempty"`
}

type adminShard struct {
	Shard          int     `json:"shard"`
	Pending        int64   `json:"pending"`
	Scheduled      int64   `json:"scheduled"`
	Processing     int64   `json:"processing"`
	Failed         int64   `json:"failed"`
	Completed      int64   `json:"completed"`
	DeadLetters    int64   `json:"dead_letters"`
	TotalProcessed int64   `json:"total_processed"`
	TotalFailed    int64   `json:"total_failed"`
	OldestPending  *string `json:"oldest_pending,omitempty"`
	Healthy        bool    `json:"healthy"`
	LastError      string  `json:"last_error,omitempty"`
}

func (a *admin) workers(w http.ResponseWriter, r *http.Request, _ []string) error {
	ws, err := a.c.Workers(r.Context())
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, map[string][]WorkerInfo{"workers": ws})
}

func (a *admin) stats(w http.ResponseWriter, r *http.Request, _ []string) error {
	s, err := a.c.Stats(r.Context())
	if err != nil && (s.PerShard == nil || !errors.Is(err, ErrShardUnavailable)) {
		return err
	}
	out := struct {
		Stats
		Shards []adminShard `json:"shards"`
		Worker *WorkerStats `json:"worker,omitempty"`
		Error  string       `json:"error,omitempty"` // why the snapshot is incomplete (unreadable shards)
	}{Stats: s, Shards: []adminShard{}}
	if err != nil {
		out.Error = err.Error()
	}
	for _, sh := range s.PerShard {
		as := adminShard{Shard: sh.Shard, Pending: sh.Pending, Scheduled: sh.Scheduled, Processing: sh.Processing,
			Failed: sh.Failed, Completed: sh.Completed, DeadLetters: sh.DeadLetters, TotalProcessed: sh.TotalProcessed,
			TotalFailed: sh.TotalFailed, Healthy: sh.Healthy, LastError: sh.LastError}
		if !sh.OldestPending.IsZero() {
			t := sh.OldestPending.UTC().Format(time.RFC3339Nano)
			as.OldestPending = &t
		}
		out.Shards = append(out.Shards, as)
	}
	if ws, ok := a.c.WorkerStats(); ok {
		out.Worker = &ws
	}
	return reply(w, http.StatusOK, out)
}

func (a *admin) jobs(w http.ResponseWriter, r *http.Request, _ []string) error {
	p, err := a.listParams(r, true)
	if err != nil {
		return err
	}
	q := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("q")))
	limit := p.Limit
	if limit == 0 {
		limit = 100
	}
	if q != "" {
		p.Limit = 1000 // the text filter searches the newest 1000 matches of the other filters
	}
	js, err := a.c.Jobs(r.Context(), p)
	if err != nil {
		return err
	}
	out := make([]adminJob, 0, min(len(js), limit))
	for _, j := range js {
		if len(out) == limit {
			break
		}
		if q == "" || matchText(j, q) {
			out = append(out, toAdminJob(j))
		}
	}
	return reply(w, http.StatusOK, map[string]any{"jobs": out})
}

// jobID parses a job ID path segment; an ID whose shard does not exist
// names no job.
func (a *admin) jobID(s string) (JobID, error) {
	id, err := ParseJobID(s)
	if err != nil {
		return 0, badRequest("job id %q: want a number or shard:seq", s)
	}
	if id.Shard() >= a.c.Shards() {
		return 0, &httpError{http.StatusNotFound, fmt.Sprintf("no job %s", s)}
	}
	return id, nil
}

func (a *admin) job(w http.ResponseWriter, r *http.Request, args []string) error {
	id, err := a.jobID(args[0])
	if err != nil {
		return err
	}
	j, err := a.c.Job(r.Context(), id)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, struct {
		adminJob
		ErrorStack string          `json:"error_stack,omitempty"`
		Metadata   json.RawMessage `json:"metadata,omitempty"`
	}{toAdminJob(j), j.ErrorStack, j.Metadata})
}

func (a *admin) deadLetters(w http.ResponseWriter, r *http.Request, _ []string) error {
	p, err := a.listParams(r, false)
	if err != nil {
		return err
	}
	ds, err := a.c.DeadLetters(r.Context(), p)
	if err != nil {
		return err
	}
	out := make([]adminDeadLetter, len(ds))
	for i, d := range ds {
		out[i] = adminDeadLetter{ID: d.ID, Shard: d.Shard, OriginalJobID: d.OriginalJobID, Task: d.Task, Payload: d.Payload,
			Error: d.Error, ErrorType: d.ErrorType, Attempts: d.Attempts, FailedAt: timePtr(d.FailedAt)}
	}
	return reply(w, http.StatusOK, map[string]any{"dead_letters": out})
}

func (a *admin) periodic(w http.ResponseWriter, r *http.Request, _ []string) error {
	ps, err := a.c.PeriodicTasks(r.Context())
	if err != nil {
		return err
	}
	if ps == nil {
		ps = []PeriodicInfo{}
	}
	return reply(w, http.StatusOK, map[string]any{"periodic": ps})
}

// noBody rejects a body on endpoints that take none.
func (a *admin) noBody(r *http.Request) error {
	if r.ContentLength > 0 {
		return badRequest("this endpoint takes no request body")
	}
	return nil
}

func (a *admin) retryAll(w http.ResponseWriter, r *http.Request, _ []string) error {
	if err := a.noBody(r); err != nil {
		return err
	}
	for name := range r.URL.Query() {
		if name != "shard" {
			return badRequest("unknown query parameter %q", name)
		}
	}
	sh, ok, err := queryInt(r, "shard", 0, a.c.Shards()-1)
	if err != nil {
		return err
	}
	if !ok {
		sh = -1
	}
	n, err := a.c.RetryFailed(r.Context(), sh)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, map[string]int{"retried": n})
}

func (a *admin) retryJob(w http.ResponseWriter, r *http.Request, args []string) error {
	if err := a.noBody(r); err != nil {
		return err
	}
	id, err := a.jobID(args[0])
	if err != nil {
		return err
	}
	if err := a.c.RetryJob(r.Context(), id); err != nil {
		return err
	}
	return reply(w, http.StatusOK, map[string]any{"retried": 1, "job_id": id})
}

func (a *admin) cancelJob(w http.ResponseWriter, r *http.Request, args []string) error {
	if err := a.noBody(r); err != nil {
		return err
	}
	id, err := a.jobID(args[0])
	if err != nil {
		return err
	}
	st, err := a.c.Cancel(r.Context(), id)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, map[string]any{"job_id": id, "status": st})
}

func (a *admin) requeue(w http.ResponseWriter, r *http.Request, args []string) error {
	if err := a.noBody(r); err != nil {
		return err
	}
	sh, err := strconv.Atoi(args[0])
	if err != nil || sh < 0 {
		return badRequest("shard %q: want a non-negative integer", args[0])
	}
	if sh >= a.c.Shards() {
		return &httpError{http.StatusNotFound, fmt.Sprintf("no shard %d (shards: 0–%d)", sh, a.c.Shards()-1)}
	}
	dlq, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil || dlq < 1 {
		return badRequest("dead letter id %q: want a positive integer", args[1])
	}
	id, err := a.c.RequeueDead(r.Context(), sh, dlq)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, map[string]any{"job_id": id})
}

func (a *admin) purge(w http.ResponseWriter, r *http.Request, _ []string) error {
	var req struct {
		Statuses []string `json:"statuses"`
	}
	if err := a.decode(w, r, &req); err != nil {
		return err
	}
	if len(req.Statuses) == 0 {
		return badRequest(`field "statuses": required, list the statuses to purge (e.g. ["failed", "completed"])`)
	}
	sts := make([]Status, len(req.Statuses))
	for i, s := range req.Statuses {
		st, err := ParseStatus(s)
		if err != nil {
			return badRequest("field \"statuses\"[%d]: %v", i, err)
		}
		sts[i] = st
	}
	n, err := a.c.Purge(r.Context(), sts...)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, map[string]int{"purged": n})
}

func (a *admin) recover(w http.ResponseWriter, r *http.Request, _ []string) error {
	if err := a.noBody(r); err != nil {
		return err
	}
	res, err := a.c.RecoverOrphans(r.Context())
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, map[string]int{"requeued": res.Requeued, "dead_lettered": res.DeadLettered})
}

// enqueueRequest is the body of POST /enqueue.
type enqueueRequest struct {
	Task    string          `json:"task"`
	Payload json.RawMessage `json:"payload"`
	Opts    struct {
		Priority   *Priority      `json:"priority"`
		MaxRetries *int           `json:"max_retries"`
		Key        *int64         `json:"key"`
		RunAt      time.Time      `json:"run_at"`
		Delay      string         `json:"delay"`
		Timeout    string         `json:"timeout"`
		Tags       []string       `json:"tags"`
		Metadata   map[string]any `json:"metadata"`
	} `json:"opts"`
}

func (a *admin) enqueue(w http.ResponseWriter, r *http.Request, _ []string) error {
	var req enqueueRequest
	if err := a.decode(w, r, &req); err != nil {
		return err
	}
	if req.Task == "" {
		return badRequest(`field "task": required`)
	}
	payload := req.Payload
	if len(payload) == 0 || string(payload) == "null" {
		payload = json.RawMessage("{}")
	}
	if payload[0] != '{' {
		return badRequest(`field "payload": want a JSON object`)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, payload); err != nil {
		return badRequest(`field "payload": %v`, err)
	}
	payload = compact.Bytes()
	o := Opts{Priority: req.Opts.Priority, MaxRetries: req.Opts.MaxRetries, Key: req.Opts.Key, RunAt: req.Opts.RunAt,
		Tags: req.Opts.Tags, Metadata: req.Opts.Metadata}
	if req.Opts.Timeout != "" {
		d, err := time.ParseDuration(req.Opts.Timeout)
		if err != nil || d < 0 {
			return badRequest(`field "opts.timeout": want a non-negative Go duration such as "30s", got %q`, req.Opts.Timeout)
		}
		o.Timeout = d
	}
	if o.Priority != nil && !o.Priority.Valid() {
		return badRequest(`field "opts.priority": want 0, 1 or 2, got %d`, *o.Priority)
	}
	if o.MaxRetries != nil && *o.MaxRetries < 0 {
		return badRequest(`field "opts.max_retries": want 0 or more, got %d`, *o.MaxRetries)
	}
	if req.Opts.Delay != "" {
		if !o.RunAt.IsZero() {
			return badRequest(`fields "opts.delay" and "opts.run_at": set at most one`)
		}
		d, err := time.ParseDuration(req.Opts.Delay)
		if err != nil || d < 0 {
			return badRequest(`field "opts.delay": want a non-negative Go duration such as "90s", got %q`, req.Opts.Delay)
		}
		o.RunAt = a.c.now().Add(d)
	}
	id, err := a.c.Enqueue(r.Context(), req.Task, payload, o)
	if err != nil {
		return err
	}
	return reply(w, http.StatusCreated, map[string]any{"job_id": id, "shard": id.Shard()})
}

// ServeWithWorkers runs srv on srv.Addr (":http" if empty; TLS when
// srv.TLSConfig holds a certificate) and c.Run side by side, sharing one
// graceful shutdown. See ServeListenerWithWorkers.
func ServeWithWorkers(ctx context.Context, srv *http.Server, c *Client) error {
	addr := srv.Addr
	if addr == "" {
		addr = ":http"
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("queuemax: listen: %w", err)
	}
	return ServeListenerWithWorkers(ctx, srv, ln, c)
}

// ServeListenerWithWorkers serves srv on ln and runs c.Run alongside it
// until ctx ends. Then both stop at once: srv.Shutdown stops accepting
// connections and waits for in-flight requests, while Run stops claiming
// and drains running jobs. The server gets Config.DrainTimeout; then its
// remaining connections are closed. If either stops early with an error,
// the other is stopped too. It returns once both have stopped (it takes
// ownership of ln), with the first real error: nil after a shutdown caused
// by ctx, never http.ErrServerClosed.
func ServeListenerWithWorkers(ctx context.Context, srv *http.Server, ln net.Listener, c *Client) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	record := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	wg.Go(func() {
		defer stop()
		if err := c.Run(ctx); err != nil {
			record(fmt.Errorf("queuemax: workers: %w", err))
		}
	})
	served := make(chan struct{})
	wg.Go(func() {
		defer close(served)
		defer stop()
		var err error
		if srv.TLSConfig != nil && (len(srv.TLSConfig.Certificates) > 0 || srv.TLSConfig.GetCertificate != nil) {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			record(fmt.Errorf("queuemax: http server: %w", err))
		}
	})
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.DrainTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		record(fmt.Errorf("queuemax: http shutdown: %w", err))
	}
	<-served
	wg.Wait()
	return firstErr
}
