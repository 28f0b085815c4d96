// Package queuemaxprom exports a queuemax Client's metrics to Prometheus.
// It lives apart from the root package so that programs which do not use
// Prometheus do not compile client_golang.
//
// A Collector is a prometheus.Collector and a queuemax.WorkMiddleware: put
// it in Config.Middleware (for the run-time and queue-wait histograms),
// Attach it to the client after Open (for the counters and the job counts),
// and register it:
//
//	col := queuemaxprom.NewCollector(queuemaxprom.Options{})
//	c, err := queuemax.Open(ctx, queuemax.Config{Handlers: tasks.Handlers(),
//		Middleware: []queuemax.JobMiddleware{col}})
//	if err != nil { ... }
//	defer col.Attach(c)()
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(col)
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// # Metrics
//
// Gauges read from the store, cached for Options.RefreshInterval:
//
//	queuemax_jobs{shard,task,status}          jobs stored, by shard, task and status
//	queuemax_dead_letters{shard}              rows in the dead-letter queue
//
// A scrape never scans the queue: it reuses the cached counts until they
// are RefreshInterval old, and then one scrape refreshes them with
// Client.JobCounts (one read of each shard's queue table, without the
// payloads; there is no index on task) and Client.Stats (index reads).
// Concurrent scrapes share one refresh.
//
// Counters of the attached client's events, exact (read from
// Client.EventStats().Emitted at each scrape; they count what this process
// did after Attach, and not calls made under queuemax.WithoutEvents):
//
//	queuemax_jobs_enqueued_total{task}
//	queuemax_jobs_completed_total{task}
//	queuemax_jobs_failed_total{task}          failed attempts: retried + dead-lettered
//	queuemax_jobs_retried_total{task}
//	queuemax_jobs_dead_lettered_total{task}
//
// Histograms fed by the work middleware, in seconds:
//
//	queuemax_job_run_seconds{task,outcome}    handler run time (outcome: queuemax.Outcome)
//	queuemax_job_queue_wait_seconds{task}     from ready (enqueue, run-at or retry time) to start
//
// The tasks' circuit breakers as stored (shared by every process; cached
// like the counts):
//
//	queuemax_circuit_breaker_state{task,state}  1 for the breaker's current state, 0 for the others
//	queuemax_circuit_breaker_failures{task}     its consecutive dependency failures
//
// Engine state of this process's Run, read at each scrape (in memory):
//
//	queuemax_rate_limit_waits_total{task}       claim rounds that left the task out for want of a token
//	queuemax_workers_live                       live worker processes (see Options.LiveWorkers)
//	queuemax_worker_running_jobs                jobs this process's handlers run now
//	queuemax_worker_concurrency                 how many jobs this process may run at once
//	queuemax_stats_refresh_errors_total         failed refreshes (the last counts stay reported)
package queuemaxprom

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/queuemax/queuemax"
)

// DefaultRefreshInterval is how long job counts are cached when
// Options.RefreshInterval is zero.
const DefaultRefreshInterval = 15 * time.Second

// Options configure NewCollector. The zero value means the defaults.
type Options struct {
	// Namespace prefixes every metric name. Empty means "queuemax".
	Namespace string
	// RefreshInterval is the longest time a scrape reuses cached job
	// counts before it reads the store again. Zero means 15s.
	RefreshInterval time.Duration
	// RunTimeBuckets and WaitBuckets are the histograms' bucket bounds in
	// seconds. Nil means 1ms to about 16 minutes, doubling.
	RunTimeBuckets, WaitBuckets []float64
	// LiveWorkers returns how many worker processes are live across the
	// queue. Nil counts the entries of the worker registry
	// (Client.Workers): every process whose Run is active, on any host.
	LiveWorkers func(ctx context.Context) (int, error)
	// Timeout bounds a refresh's store reads. Zero means 10s.
	Timeout time.Duration
}

// Collector is a prometheus.Collector of one queuemax Client's metrics,
// and the queuemax.WorkMiddleware that times its jobs. It is safe for
// concurrent use.
type Collector struct {
	o   Options
	now func() time.Time // the clock; tests replace it

	enqueued, completed, failed, retried, dead *prometheus.CounterVec
	runTime, wait                              *prometheus.HistogramVec
	refreshErrs                                prometheus.Counter

	jobsDesc, deadDesc, circuitDesc, failuresDesc, waitsDesc, liveDesc, runningDesc, concDesc *prometheus.Desc
	limitDesc, limitUseDesc                                                                   *prometheus.Desc

	mu       sync.Mutex // guards client, seen and the cache; held during a refresh
	client   *queuemax.Client
	seen     map[queuemax.EventKind]map[string]uint64 // client's event totals at the last sync
	cachedAt time.Time
	counts   []queuemax.JobCount
	stats    queuemax.Stats
	live     int
}

// NewCollector returns a Collector; Attach it to a client.
func NewCollector(o Options) *Collector {
	if o.Namespace == "" {
		o.Namespace = "queuemax"
	}
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = DefaultRefreshInterval
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	def := prometheus.ExponentialBuckets(0.001, 2, 21)
	if o.RunTimeBuckets == nil {
		o.RunTimeBuckets = def
	}
	if o.WaitBuckets == nil {
		o.WaitBuckets = def
	}
	ns := o.Namespace
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, []string{"task"})
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(ns, "", name), help, labels, nil)
	}
	return &Collector{
		o:         o,
		now:       time.Now,
		enqueued:  counter("jobs_enqueued_total", "Jobs enqueued by this process."),
		completed: counter("jobs_completed_total", "Jobs this process completed."),
		failed:    counter("jobs_failed_total", "Failed attempts in this process (retried plus dead-lettered)."),
		retried:   counter("jobs_retried_total", "Failed attempts in this process that will be retried."),
		dead:      counter("jobs_dead_lettered_total", "Jobs this process moved to the dead-letter queue."),
		runTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "job_run_seconds",
			Help: "Handler run time of each job execution, in seconds.", Buckets: o.RunTimeBuckets}, []string{"task", "outcome"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "job_queue_wait_seconds",
			Help: "Time from a job being ready (enqueue, run-at or retry time) to its start, in seconds.", Buckets: o.WaitBuckets}, []string{"task"}),
		refreshErrs: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "stats_refresh_errors_total",
			Help: "Refreshes of the cached job counts that failed."}),
		jobsDesc:     desc("jobs", "Jobs stored, by shard, task and status (cached).", "shard", "task", "status"),
		deadDesc:     desc("dead_letters", "Rows in the dead-letter queue (cached).", "shard"),
		circuitDesc:  desc("circuit_breaker_state", "1 for each task breaker's current state, 0 for the others (stored, shared by every process).", "task", "state"),
		failuresDesc: desc("circuit_breaker_failures", "Consecutive dependency failures counted by each task's circuit breaker.", "task"),
		waitsDesc:    desc("rate_limit_waits_total", "Claim rounds that left a task out because its rate limit had no token.", "task"),
		liveDesc:     desc("workers_live", "Live worker processes."),
		runningDesc:  desc("worker_running_jobs", "Jobs this process's handlers are running."),
		concDesc:     desc("worker_concurrency", "How many jobs this process may run at once."),
		limitDesc: desc("global_limit", "Each global limit over every process: running jobs (concurrency) or starts per period (rate; see the per label).",
			"scope", "name", "limit", "per"),
		limitUseDesc: desc("global_limit_in_use", "Each global limit's current use over every process: jobs running (concurrency) or started in the last period (rate) (cached).",
			"scope", "name", "limit", "per"),
	}
}

// Attach makes the collector count c's events and read its counts at
// scrapes. It returns a function that detaches it again. A collector
// serves one client at a time; attaching another replaces it.
//
// The event counters are exact: at each scrape (and at detach) they add
// what c's exact event totals (Client.EventStats().Emitted, counted by the
// engine before any subscriber sees an event) grew by since the last
// scrape, so they count every event emitted after Attach, however busy the
// process, and cost the queue no callback per event.
func (col *Collector) Attach(c *queuemax.Client) (detach func()) {
	col.mu.Lock()
	col.syncCounters() // the previous client's last events
	col.client, col.cachedAt = c, time.Time{}
	col.seen = c.EventStats().Emitted // count from now on
	col.mu.Unlock()
	return func() {
		col.mu.Lock()
		if col.client == c {
			col.syncCounters()
			col.client, col.seen = nil, nil
		}
		col.mu.Unlock()
	}
}

// syncCounters adds to the event counters what the attached client's
// event totals grew by since the last sync. col.mu is held.
func (col *Collector) syncCounters() {
	if col.client == nil {
		return
	}
	emitted := col.client.EventStats().Emitted
	for kind, tasks := range emitted {
		for task, n := range tasks {
			d := float64(n - col.seen[kind][task])
			if d <= 0 {
				continue
			}
			switch kind {
			case queuemax.EventEnqueued:
				col.enqueued.WithLabelValues(task).Add(d)
			case queuemax.EventCompleted:
				col.completed.WithLabelValues(task).Add(d)
			case queuemax.EventRetried:
				col.retried.WithLabelValues(task).Add(d)
				col.failed.WithLabelValues(task).Add(d)
			case queuemax.EventFailed:
				col.dead.WithLabelValues(task).Add(d)
				col.failed.WithLabelValues(task).Add(d)
			}
		}
	}
	col.seen = emitted
}

// Work implements queuemax.WorkMiddleware: it observes the job's queue
// wait and its handler's run time.
func (col *Collector) Work(ctx context.Context, job *queuemax.Job, next func(context.Context) (any, error)) (any, error) {
	col.wait.WithLabelValues(job.Task).Observe(job.QueueWait().Seconds())
	start := time.Now()
	res, err := next(ctx)
	col.runTime.WithLabelValues(job.Task, queuemax.Outcome(job, err)).Observe(time.Since(start).Seconds())
	return res, err
}

// Describe implements prometheus.Collector.
func (col *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{col.jobsDesc, col.deadDesc, col.circuitDesc, col.failuresDesc, col.waitsDesc,
		col.liveDesc, col.runningDesc, col.concDesc, col.limitDesc, col.limitUseDesc} {
		ch <- d
	}
	for _, c := range col.collectors() {
		c.Describe(ch)
	}
}

func (col *Collector) collectors() []prometheus.Collector {
	return []prometheus.Collector{col.enqueued, col.completed, col.failed, col.retried, col.dead,
		col.runTime, col.wait, col.refreshErrs}
}

// Collect implements prometheus.Collector. It refreshes the cached counts
// when they are older than Options.RefreshInterval.
func (col *Collector) Collect(ch chan<- prometheus.Metric) {
	col.mu.Lock()
	col.syncCounters()
	col.mu.Unlock()
	for _, c := range col.collectors() {
		c.Collect(ch)
	}
	col.mu.Lock()
	c := col.client
	if c == nil {
		col.mu.Unlock()
		return
	}
	if now := col.now(); col.cachedAt.IsZero() || now.Sub(col.cachedAt) >= col.o.RefreshInterval {
		if err := col.refresh(c); err != nil {
			col.refreshErrs.Inc() // keep the last counts; retry after the interval
		}
		col.cachedAt = now
	}
	counts, stats, live := col.counts, col.stats, col.live
	col.mu.Unlock()

	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, n := range counts {
		gauge(col.jobsDesc, float64(n.Count), strconv.Itoa(n.Shard), n.Task, string(n.Status))
	}
	for _, s := range stats.PerShard {
		gauge(col.deadDesc, float64(s.DeadLetters), strconv.Itoa(s.Shard))
	}
	gauge(col.liveDesc, float64(live))
	col.collectLimits(gauge, stats.GlobalLimits)
	for _, b := range stats.Breakers {
		for _, s := range []queuemax.CircuitState{queuemax.CircuitClosed, queuemax.CircuitOpen, queuemax.CircuitHalfOpen} {
			v := 0.0
			if s.String() == b.State {
				v = 1
			}
			gauge(col.circuitDesc, v, b.Task, s.String())
		}
		gauge(col.failuresDesc, float64(b.Failures), b.Task)
	}

	// In-memory engine state: current at every scrape.
	ws, ok := c.WorkerStats()
	if ok && ws.State == queuemax.WorkerRunning {
		gauge(col.runningDesc, float64(ws.Running))
		gauge(col.concDesc, float64(ws.Concurrency))
	} else {
		gauge(col.runningDesc, 0)
		gauge(col.concDesc, 0)
	}
	for task, n := range c.RateLimitWaits() {
		ch <- prometheus.MustNewConstMetric(col.waitsDesc, prometheus.CounterValue, float64(n), task)
	}
}

// refresh reads the job counts, the stats and the live workers into the
// cache. col.mu is held.
func (col *Collector) refresh(c *queuemax.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), col.o.Timeout)
	defer cancel()
	counts, err := c.JobCounts(ctx)
	if err != nil {
		return err
	}
	stats, err := c.Stats(ctx)
	if err != nil {
		return err
	}
	live := 0
	if col.o.LiveWorkers != nil {
		if live, err = col.o.LiveWorkers(ctx); err != nil {
			return errors.Join(errors.New("queuemaxprom: live workers"), err)
		}
	} else {
		ws, err := c.Workers(ctx)
		if err != nil {
			return errors.Join(errors.New("queuemaxprom: live workers"), err)
		}
		live = len(ws)
	}
	col.counts, col.stats, col.live = counts, stats, live
	return nil
}

var (
	_ prometheus.Collector    = (*Collector)(nil)
	_ queuemax.WorkMiddleware = (*Collector)(nil)
	_ queuemax.JobMiddleware  = (*Collector)(nil)
)

// Handler serves c's metrics in the Prometheus text format from a
// registry of their own: a Collector attached to c (job counts by shard,
// task and status, dead letters, breaker states and the live workers of
// the registry, read from the store at most every RefreshInterval). It is
// what the queuemax command's dashboard serves at GET /metrics
// (cli.Program.Metrics). Its event counters and histograms count only this
// process's work, so a process that runs no jobs shows them at zero.
func Handler(c *queuemax.Client) (http.Handler, error) {
	col := NewCollector(Options{})
	col.Attach(c)
	reg := prometheus.NewRegistry()
	if err := reg.Register(col); err != nil {
		return nil, err
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}
