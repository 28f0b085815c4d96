package queuemaxhttp

import (
	"context"
	"embed"
	"errors"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/queuemax/queuemax/runtime/store"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxtype"
)

// The dashboard: static assets under ui/ of the admin handler and the read
// endpoints its pages poll (info, tasks, throughput, workers, breakers).
// Everything is embedded; nothing is fetched from the internet.

//go:embed ui
var uiFiles embed.FS

// uiCSP is the Content-Security-Policy of the dashboard's assets: scripts,
// styles and requests only from the handler itself, no inline script, no
// framing (clickjacking).
const uiCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

var uiTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// serveUI answers GET ui/... with an embedded asset; "ui/" is the page.
func (a *admin) serveUI(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		a.fail(w, r, &httpError{http.StatusMethodNotAllowed, "the dashboard's assets take GET only"})
		return
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/"), "ui")
	if rel == "" {
		// A relative Location keeps the mount prefix that StripPrefix hid.
		w.Header().Set("Location", "ui/")
		w.WriteHeader(http.StatusMovedPermanently)
		return
	}
	rel = strings.TrimPrefix(rel, "/")
	if rel == "" {
		rel = "index.html"
	}
	ctype, ok := uiTypes[path.Ext(rel)]
	var data []byte
	var err error
	if ok && !strings.Contains(rel, "..") {
		data, err = fs.ReadFile(uiFiles, "ui/"+rel)
	}
	if !ok || err != nil {
		a.fail(w, r, &httpError{http.StatusNotFound, "no dashboard asset " + rel})
		return
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(data)
	}
}

// info tells the dashboard what it may offer.
func (a *admin) info(w http.ResponseWriter, r *http.Request, _ []string) error {
	_, running := a.c.WorkerStats()
	return reply(w, http.StatusOK, map[string]any{
		"read_only":        a.tokenSum == nil,
		"protect_reads":    a.opts.ProtectReads,
		"shards":           a.c.Shards(),
		"dir":              a.c.Dir(),
		"worker_running":   running,
		"worker_registry":  false, // Client.Workers is not part of this build
		"throughput_step":  int(throughputStep / time.Second),
		"throughput_range": int(throughputWindow / time.Second),
		"statuses":         store.Statuses,
		"cancel_supported": false,
	})
}

// adminTask is one row of GET /tasks.
type adminTask struct {
	Task        string        `json:"task"`
	Pending     int64         `json:"pending"`
	Scheduled   int64         `json:"scheduled"`
	Processing  int64         `json:"processing"`
	Completed   int64         `json:"completed"`
	Failed      int64         `json:"failed"`
	Cancelled   int64         `json:"cancelled"`
	DeadLetters int64         `json:"dead_letters"`
	PerShard    map[int]int64 `json:"per_shard"`         // jobs in the queue table by shard
	Circuit     string        `json:"circuit,omitempty"` // its stored circuit breaker's state, shared by every process
}

func (t *adminTask) add(st queuemax.Status, n int64) {
	switch st {
	case queuemax.StatusPending:
		t.Pending += n
	case queuemax.StatusScheduled:
		t.Scheduled += n
	case queuemax.StatusProcessing:
		t.Processing += n
	case queuemax.StatusCompleted:
		t.Completed += n
	case queuemax.StatusFailed:
		t.Failed += n
	case queuemax.StatusCancelled:
		t.Cancelled += n
	case "":
		t.DeadLetters += n
	}
}

// taskCountsTTL is how long GET /tasks reuses its counts: grouping the job
// table by task reads every row, so polling dashboards share one count.
const taskCountsTTL = 2 * time.Second

// taskCounts returns every task's counts, cached for taskCountsTTL.
func (a *admin) taskCounts(ctx context.Context) ([]adminTask, error) {
	a.tasksMu.Lock()
	defer a.tasksMu.Unlock()
	now := time.Now()
	if a.tasksCache != nil && now.Sub(a.tasksAt) < taskCountsTTL {
		return a.tasksCache, nil
	}
	byName := make(map[string]*adminTask)
	get := func(name string) *adminTask {
		t := byName[name]
		if t == nil {
			t = &adminTask{Task: name, PerShard: map[int]int64{}}
			byName[name] = t
		}
		return t
	}
	rows, err := a.c.CountsByTask(ctx)
	if err != nil {
		return nil, err
	}
	for _, row := range rows {
		t := get(row.Task)
		t.add(row.Status, row.Count)
		if !row.IsDeadLetters() {
			t.PerShard[row.Shard] += row.Count
		}
	}
	// Registered tasks with no stored jobs still get a row.
	for _, name := range a.c.Tasks() {
		get(name)
	}
	bs, err := a.c.CircuitBreakers(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range byName {
		t.Circuit = "closed" // no stored breaker: nothing failed
	}
	for _, b := range bs {
		if t, ok := byName[b.Task]; ok {
			t.Circuit = b.State
		}
	}
	out := make([]adminTask, 0, len(byName))
	for _, t := range byName {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(x, y adminTask) int { return strings.Compare(x.Task, y.Task) })
	a.tasksCache, a.tasksAt = out, now
	return out, nil
}

func (a *admin) tasks(w http.ResponseWriter, r *http.Request, _ []string) error {
	if err := onlyParams(r); err != nil {
		return err
	}
	ts, err := a.taskCounts(r.Context())
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, map[string]any{"tasks": ts})
}

// onlyParams refuses query parameters not named.
func onlyParams(r *http.Request, names ...string) error {
	for name := range r.URL.Query() {
		if !slices.Contains(names, name) {
			return badRequest("unknown query parameter %q", name)
		}
	}
	return nil
}

// The throughput chart: cumulative totals sampled when the dashboard polls
// (at most once per throughputSample), turned into per-step counts over the
// last throughputWindow. Completed and failed come from the shards' totals,
// so they include every process's work; retried comes from the workers of
// this process (no shard counts retries).
const (
	throughputSample = time.Second
	throughputStep   = 5 * time.Second
	throughputWindow = 10 * time.Minute
)

type tpSample struct {
	at                         time.Time
	completed, failed, retried int64
}

type throughput struct {
	mu      sync.Mutex
	samples []tpSample // oldest first, within throughputWindow + one step
}

// observe records one sample unless the last is younger than
// throughputSample.
func (tp *throughput) observe(now time.Time, take func() (tpSample, error)) error {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if n := len(tp.samples); n > 0 && now.Sub(tp.samples[n-1].at) < throughputSample {
		return nil
	}
	s, err := take()
	if err != nil {
		return err
	}
	s.at = now
	tp.samples = append(tp.samples, s)
	cut := now.Add(-throughputWindow - throughputStep)
	i := 0
	for i < len(tp.samples)-1 && tp.samples[i].at.Before(cut) {
		i++
	}
	tp.samples = slices.Delete(tp.samples, 0, i)
	return nil
}

// tpPoint is one step of the chart; nil counts mean no sample covered it.
type tpPoint struct {
	At        time.Time `json:"at"`
	Completed *int64    `json:"completed"`
	Failed    *int64    `json:"failed"`
	Retried   *int64    `json:"retried"`
}

// series returns the steps of the window ending at now, oldest first. The
// increase between two samples counts in the step of the later one; a
// counter that went down (a restarted worker) counts from zero.
func (tp *throughput) series(now time.Time) []tpPoint {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	steps := int(throughputWindow / throughputStep)
	end := now.Truncate(throughputStep).Add(throughputStep)
	start := end.Add(-time.Duration(steps) * throughputStep)
	pts := make([]tpPoint, steps)
	for i := range pts {
		pts[i].At = start.Add(time.Duration(i) * throughputStep)
	}
	delta := func(cur, prev int64) int64 {
		if cur < prev {
			return cur
		}
		return cur - prev
	}
	add := func(p **int64, n int64) {
		if *p == nil {
			*p = new(int64)
		}
		**p += n
	}
	for i := 1; i < len(tp.samples); i++ {
		prev, cur := tp.samples[i-1], tp.samples[i]
		k := int(cur.at.Sub(start) / throughputStep)
		if k < 0 || k >= steps {
			continue
		}
		add(&pts[k].Completed, delta(cur.completed, prev.completed))
		add(&pts[k].Failed, delta(cur.failed, prev.failed))
		add(&pts[k].Retried, delta(cur.retried, prev.retried))
	}
	// A step between the first and the last sample that holds no sample
	// of its own saw no change: zero, not unknown.
	if len(tp.samples) > 1 {
		first := int(tp.samples[0].at.Sub(start) / throughputStep)
		last := int(tp.samples[len(tp.samples)-1].at.Sub(start) / throughputStep)
		for k := max(first+1, 0); k <= last && k < steps; k++ {
			for _, p := range []**int64{&pts[k].Completed, &pts[k].Failed, &pts[k].Retried} {
				if *p == nil {
					*p = new(int64)
				}
			}
		}
	}
	return pts
}

// sample reads the cumulative totals.
func (a *admin) sample(ctx context.Context) error {
	return a.tp.observe(time.Now(), func() (tpSample, error) {
		ss, err := a.c.ShardStats(ctx)
		if err != nil {
			return tpSample{}, err
		}
		sum := queuemaxtype.SumShards(ss)
		s := tpSample{completed: sum.TotalProcessed, failed: sum.TotalFailed}
		if ws, ok := a.c.WorkerStats(); ok {
			s.retried = ws.Retried
		}
		return s, nil
	})
}

func (a *admin) throughput(w http.ResponseWriter, r *http.Request, _ []string) error {
	if err := onlyParams(r); err != nil {
		return err
	}
	if err := a.sample(r.Context()); err != nil {
		return err
	}
	return reply(w, http.StatusOK, map[string]any{
		"step_seconds": int(throughputStep / time.Second),
		"points":       a.tp.series(time.Now()),
	})
}

// adminBreaker is one task's circuit breaker as stored (every process
// shares it), with this process's rejections while its Run is active.
type adminBreaker struct {
	queuemax.CircuitBreakerInfo
	Rejected          uint64  `json:"rejected"`
	TimeoutSeconds    float64 `json:"timeout_seconds,omitempty"`
	RecoveryInSeconds float64 `json:"recovery_in_seconds,omitempty"`
}

func (a *admin) breakers(w http.ResponseWriter, r *http.Request, _ []string) error {
	if err := onlyParams(r); err != nil {
		return err
	}
	infos, err := a.c.CircuitBreakers(r.Context())
	if err != nil {
		return err
	}
	local, running := a.c.Breakers()
	now := time.Now()
	out := make([]adminBreaker, 0, len(infos))
	for _, b := range infos {
		ab := adminBreaker{CircuitBreakerInfo: b}
		if b.State == "open" && b.OpenUntil.After(now) {
			ab.RecoveryInSeconds = b.OpenUntil.Sub(now).Seconds()
		}
		for _, l := range local {
			if l.Task == b.Task {
				ab.Rejected, ab.TimeoutSeconds = l.Stats.Rejected, l.Stats.Timeout.Seconds()
			}
		}
		out = append(out, ab)
	}
	return reply(w, http.StatusOK, map[string]any{"breakers": out, "running": running})
}

// matchText reports whether a job contains q (case-insensitively) in its
// ID, task, payload, error or worker.
func matchText(j *queuemax.Job, q string) bool {
	for _, s := range []string{j.ID.String(), j.Task, string(j.Payload), j.LastError, j.ErrorType, j.WorkerID} {
		if strings.Contains(strings.ToLower(s), q) {
			return true
		}
	}
	return false
}

// errCrossOrigin is the answer to a state-changing request a browser sent
// from another site.
var errCrossOrigin = errors.New("cross-origin request refused: the admin API takes state-changing requests only from its own origin")
