// Package queuemaxotel traces and measures queuemax jobs with
// OpenTelemetry. It lives apart from the root package so that programs
// which do not use OpenTelemetry do not compile it.
//
// A Middleware is both a queuemax.EnqueueMiddleware and a
// queuemax.WorkMiddleware. On enqueue it starts a producer span
// ("enqueue <task>", a child of the caller's span) and writes that span's
// context into each job's metadata as W3C trace context (traceparent and
// tracestate, under the metadata key "otel"). On execution, in this or any
// other process that shares the data directory, it reads the context back
// and starts a consumer span ("process <task>") per execution.
//
// The execution span is a child of the enqueue span, so enqueue and every
// attempt of the job form one trace, also across processes. A job's
// execution can come long after its enqueue (a schedule, retries, a
// periodic task); set Options.LinkOnly to start each execution in a trace
// of its own with a span link to the enqueue span instead.
//
// Attributes of the execution span: queuemax.task, queuemax.job.id,
// queuemax.job.shard, queuemax.job.attempt and queuemax.job.outcome:
// "completed", "retry" (the attempt failed and will be retried) or
// "dead_lettered" (it failed for good); a failed attempt also records the
// error and sets the span status to Error.
//
// Metrics, mirroring package queuemaxprom (Attach the client for those
// that need it):
//
//	queuemax.jobs.enqueued, .completed, .failed, .retried, .dead_lettered  counters {queuemax.task}  (events; Attach)
//	queuemax.job.run.duration     histogram, s {queuemax.task, queuemax.job.outcome}  (middleware)
//	queuemax.job.queue.wait       histogram, s {queuemax.task}: ready (enqueue, run-at or retry time) to start
//	queuemax.jobs                 gauge {queuemax.shard, queuemax.task, queuemax.job.status}  (Attach; cached)
//	queuemax.circuit_breaker.state  gauge {queuemax.task, state}: 1 for the current state
//	queuemax.rate_limit.waits     counter {queuemax.task}
//	queuemax.workers.live         gauge
//
// The job counts are cached for Options.RefreshInterval, as in
// queuemaxprom: a collection reads the store (Client.JobCounts, one read of
// each shard's queue table) at most once per interval.
//
// Usage:
//
//	mw, err := queuemaxotel.NewMiddleware(queuemaxotel.Options{}) // global providers
//	if err != nil { ... }
//	c, err := queuemax.Open(ctx, queuemax.Config{Handlers: tasks.Handlers(),
//		Middleware: []queuemax.JobMiddleware{mw}})
//	if err != nil { ... }
//	detach, err := mw.Attach(c) // counters and gauges
//	if err != nil { ... }
//	defer detach()
package queuemaxotel

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/queuemax/queuemax"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/queuemax/queuemax/queuemaxotel"

// MetadataKey is the job metadata key that holds the trace context.
const MetadataKey = "otel"

// Attribute keys.
const (
	AttrTask    = attribute.Key("queuemax.task")
	AttrJobID   = attribute.Key("queuemax.job.id")
	AttrShard   = attribute.Key("queuemax.job.shard")
	AttrAttempt = attribute.Key("queuemax.job.attempt")
	AttrOutcome = attribute.Key("queuemax.job.outcome")
	AttrCount   = attribute.Key("queuemax.job.count")
)

// Options configure NewMiddleware. The zero value uses the global
// providers and W3C trace context.
type Options struct {
	// TracerProvider makes the spans. Nil means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the instruments. Nil means
	// otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// Propagator writes and reads the trace context in job metadata. Nil
	// means W3C trace context (propagation.TraceContext).
	Propagator propagation.TextMapPropagator
	// LinkOnly starts each execution span as the root of a new trace with
	// a link to the enqueue span, instead of as the enqueue span's child.
	LinkOnly bool
	// RefreshInterval is the longest time the queuemax.jobs gauge reuses
	// cached counts. Zero means 15s.
	RefreshInterval time.Duration
	// LiveWorkers returns how many worker processes are live; nil counts
	// the entries of the worker registry (Client.Workers).
	LiveWorkers func(ctx context.Context) (int, error)
}

// Middleware traces enqueues and executions and records job metrics. It
// is safe for concurrent use.
type Middleware struct {
	o      Options
	tracer trace.Tracer
	meter  metric.Meter
	prop   propagation.TextMapPropagator

	enqueued, completed, failed, retried, dead metric.Int64Counter
	runTime, wait                              metric.Float64Histogram

	mu       sync.Mutex // guards the cache
	cachedAt time.Time
	counts   []queuemax.JobCount
	live     int
	now      func() time.Time
}

// NewMiddleware returns a Middleware; put it in Config.Middleware and
// Attach it to the client after Open. It fails only if an instrument
// cannot be created.
func NewMiddleware(o Options) (*Middleware, error) {
	if o.TracerProvider == nil {
		o.TracerProvider = otel.GetTracerProvider()
	}
	if o.MeterProvider == nil {
		o.MeterProvider = otel.GetMeterProvider()
	}
	if o.Propagator == nil {
		o.Propagator = propagation.TraceContext{}
	}
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = 15 * time.Second
	}
	m := &Middleware{o: o, tracer: o.TracerProvider.Tracer(ScopeName), meter: o.MeterProvider.Meter(ScopeName),
		prop: o.Propagator, now: time.Now}
	var errs []error
	counter := func(name, desc string) metric.Int64Counter {
		c, err := m.meter.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit("{job}"))
		errs = append(errs, err)
		return c
	}
	m.enqueued = counter("queuemax.jobs.enqueued", "Jobs enqueued by this process.")
	m.completed = counter("queuemax.jobs.completed", "Jobs this process completed.")
	m.failed = counter("queuemax.jobs.failed", "Failed attempts in this process (retried plus dead-lettered).")
	m.retried = counter("queuemax.jobs.retried", "Failed attempts in this process that will be retried.")
	m.dead = counter("queuemax.jobs.dead_lettered", "Jobs this process moved to the dead-letter queue.")
	var err error
	m.runTime, err = m.meter.Float64Histogram("queuemax.job.run.duration", metric.WithUnit("s"),
		metric.WithDescription("Handler run time of each job execution."))
	errs = append(errs, err)
	m.wait, err = m.meter.Float64Histogram("queuemax.job.queue.wait", metric.WithUnit("s"),
		metric.WithDescription("Time from a job being ready (enqueue, run-at or retry time) to its start."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

// InsertMany implements queuemax.EnqueueMiddleware: it starts the enqueue
// span and writes its context into every job's metadata.
func (m *Middleware) InsertMany(ctx context.Context, jobs []*queuemax.InsertJob, next func(context.Context) ([]queuemax.JobID, error)) ([]queuemax.JobID, error) {
	name := "enqueue"
	var task string
	if len(jobs) > 0 {
		task = jobs[0].Task
		for _, j := range jobs[1:] {
			if j.Task != task {
				task = ""
				break
			}
		}
	}
	attrs := []attribute.KeyValue{AttrCount.Int(len(jobs))}
	if task != "" {
		name += " " + task
		attrs = append(attrs, AttrTask.String(task))
	}
	ctx, span := m.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	defer span.End()
	carrier := propagation.MapCarrier{}
	m.prop.Inject(ctx, carrier)
	if len(carrier) > 0 {
		for _, j := range jobs {
			if err := j.SetMetadata(MetadataKey, carrier); err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
				return nil, err
			}
		}
	}
	ids, err := next(ctx)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return ids, err
	}
	if len(ids) == 1 {
		span.SetAttributes(AttrJobID.Int64(int64(ids[0])))
	}
	return ids, nil
}

// Extract returns ctx with the trace context stored in job's metadata by
// InsertMany (the enqueue span, as a remote span context), and whether
// there was one.
func (m *Middleware) Extract(ctx context.Context, job *queuemax.Job) (context.Context, bool) {
	if len(job.Metadata) == 0 {
		return ctx, false
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(job.Metadata, &meta) != nil {
		return ctx, false
	}
	var carrier propagation.MapCarrier
	if raw, ok := meta[MetadataKey]; !ok || json.Unmarshal(raw, &carrier) != nil {
		return ctx, false
	}
	ctx = m.prop.Extract(ctx, carrier)
	return ctx, trace.SpanContextFromContext(ctx).IsValid()
}

// Work implements queuemax.WorkMiddleware: it runs the handler inside the
// execution span and records the run-time and queue-wait histograms.
func (m *Middleware) Work(ctx context.Context, job *queuemax.Job, next func(context.Context) (any, error)) (any, error) {
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		AttrTask.String(job.Task), AttrJobID.Int64(int64(job.ID)), AttrShard.Int(job.Shard), AttrAttempt.Int(job.Attempts))}
	parent := ctx
	if enq, ok := m.Extract(ctx, job); ok {
		if m.o.LinkOnly {
			opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: trace.SpanContextFromContext(enq)}))
		} else {
			parent = enq
		}
	}
	// parent derives from ctx: its deadline, cancellation and values stay.
	ctx, span := m.tracer.Start(parent, "process "+job.Task, opts...)
	defer span.End()

	taskAttr := metric.WithAttributes(AttrTask.String(job.Task))
	m.wait.Record(ctx, job.QueueWait().Seconds(), taskAttr)
	start := time.Now()
	res, err := next(ctx)
	outcome := queuemax.Outcome(job, err)
	m.runTime.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(AttrTask.String(job.Task), AttrOutcome.String(outcome)))
	span.SetAttributes(AttrOutcome.String(outcome))
	// A snooze or a cancellation is the handler's choice, not a failure.
	if outcome == queuemax.OutcomeRetry || outcome == queuemax.OutcomeDeadLettered {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	return res, err
}

// Attach makes m's counters count c's events, exactly (synced from
// Client.EventStats().Emitted at each collection and at detach), and registers the
// observable instruments (job counts, breaker states, rate-limit waits,
// live workers) that read c. The returned function undoes both.
func (m *Middleware) Attach(c *queuemax.Client) (detach func(), err error) {
	// Exact counts without a callback per event: each collection (and
	// the detach) adds what c's event totals, which the engine counts
	// before any subscriber sees an event, grew by since the last one.
	var syncMu sync.Mutex
	seen := c.EventStats().Emitted // count from now on
	syncCounters := func(ctx context.Context) {
		syncMu.Lock()
		defer syncMu.Unlock()
		emitted := c.EventStats().Emitted
		for kind, tasks := range emitted {
			for task, n := range tasks {
				d := int64(n - seen[kind][task])
				if d <= 0 {
					continue
				}
				attrs := metric.WithAttributes(AttrTask.String(task))
				switch kind {
				case queuemax.EventEnqueued:
					m.enqueued.Add(ctx, d, attrs)
				case queuemax.EventCompleted:
					m.completed.Add(ctx, d, attrs)
				case queuemax.EventRetried:
					m.retried.Add(ctx, d, attrs)
					m.failed.Add(ctx, d, attrs)
				case queuemax.EventFailed:
					m.dead.Add(ctx, d, attrs)
					m.failed.Add(ctx, d, attrs)
				}
			}
		}
		seen = emitted
	}
	undo := func() { syncCounters(context.Background()) }
	jobs, err1 := m.meter.Int64ObservableGauge("queuemax.jobs", metric.WithUnit("{job}"),
		metric.WithDescription("Jobs stored, by shard, task and status (cached)."))
	circuits, err2 := m.meter.Int64ObservableGauge("queuemax.circuit_breaker.state",
		metric.WithDescription("1 for each task breaker's current state, 0 for the others."))
	waits, err3 := m.meter.Int64ObservableCounter("queuemax.rate_limit.waits",
		metric.WithDescription("Claim rounds that left a task out because its rate limit had no token."))
	live, err4 := m.meter.Int64ObservableGauge("queuemax.workers.live", metric.WithDescription("Live worker processes."))
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		undo()
		return nil, err
	}
	reg, err := m.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		syncCounters(ctx)
		counts, nLive, err := m.cached(ctx, c)
		for _, n := range counts {
			o.ObserveInt64(jobs, n.Count, metric.WithAttributes(attribute.String("queuemax.shard", strconv.Itoa(n.Shard)),
				AttrTask.String(n.Task), attribute.String("queuemax.job.status", string(n.Status))))
		}
		o.ObserveInt64(live, int64(nLive))
		for task, state := range c.CircuitStates() {
			for _, s := range []queuemax.CircuitState{queuemax.CircuitClosed, queuemax.CircuitOpen, queuemax.CircuitHalfOpen} {
				v := int64(0)
				if s.String() == state {
					v = 1
				}
				o.ObserveInt64(circuits, v, metric.WithAttributes(AttrTask.String(task), attribute.String("state", s.String())))
			}
		}
		for task, n := range c.RateLimitWaits() {
			o.ObserveInt64(waits, n, metric.WithAttributes(AttrTask.String(task)))
		}
		return err
	}, jobs, circuits, waits, live)
	if err != nil {
		undo()
		return nil, err
	}
	return func() {
		reg.Unregister()
		undo()
	}, nil
}

// cached returns the job counts and live workers, refreshed when older
// than RefreshInterval. On a failed refresh it returns the last values and
// the error.
func (m *Middleware) cached(ctx context.Context, c *queuemax.Client) ([]queuemax.JobCount, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if !m.cachedAt.IsZero() && now.Sub(m.cachedAt) < m.o.RefreshInterval {
		return m.counts, m.live, nil
	}
	m.cachedAt = now // a failed refresh is retried after the interval too
	counts, err := c.JobCounts(ctx)
	if err != nil {
		return m.counts, m.live, err
	}
	live := 0
	if m.o.LiveWorkers != nil {
		if live, err = m.o.LiveWorkers(ctx); err != nil {
			return m.counts, m.live, err
		}
	} else {
		ws, err := c.Workers(ctx)
		if err != nil {
			return m.counts, m.live, err
		}
		live = len(ws)
	}
	m.counts, m.live = counts, live
	return counts, live, nil
}

var (
	_ queuemax.EnqueueMiddleware = (*Middleware)(nil)
	_ queuemax.WorkMiddleware    = (*Middleware)(nil)
)
