package queuemaxotel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxtest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"
)

// The cross-process test runs the test binary again as the worker process
// (the child), selected by these environment variables.
const (
	childEnv    = "QUEUEMAXOTEL_TEST_CHILD"
	childDirEnv = "QUEUEMAXOTEL_TEST_DIR"
	childOutEnv = "QUEUEMAXOTEL_TEST_OUT"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain())
	}
	goleak.VerifyTestMain(m)
}

type testBundle struct {
	c      *queuemax.Client
	mw     *Middleware
	spans  *tracetest.InMemoryExporter
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	ctx    context.Context
}

func setup(t *testing.T, o Options, cfg queuemax.Config) *testBundle {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { tp.Shutdown(context.Background()); mp.Shutdown(context.Background()) })
	o.TracerProvider, o.MeterProvider = tp, mp
	mw, err := NewMiddleware(o)
	if err != nil {
		t.Fatalf("NewMiddleware: %v", err)
	}
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))
	cfg.Middleware = append(cfg.Middleware, mw)
	cfg.AllowUnknownTasks = true // tests store tasks that no worker published
	c, err := queuemax.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	detach, err := mw.Attach(c)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	t.Cleanup(detach)
	return &testBundle{c: c, mw: mw, spans: spans, tp: tp, reader: reader, ctx: t.Context()}
}

func spanNamed(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q, want 1; all: %v", len(found), name, names(spans))
	}
	return found[0]
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// metrics collects the reader's metrics by instrument name.
func metrics(t *testing.T, r *sdkmetric.ManualReader) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(t.Context(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// sumBy returns an int64 sum or gauge's points keyed by one attribute.
func sumBy(t *testing.T, data metricdata.Aggregation, key attribute.Key) map[string]int64 {
	t.Helper()
	var points []metricdata.DataPoint[int64]
	switch d := data.(type) {
	case metricdata.Sum[int64]:
		points = d.DataPoints
	case metricdata.Gauge[int64]:
		points = d.DataPoints
	default:
		t.Fatalf("aggregation %T, want an int64 sum or gauge", data)
	}
	out := map[string]int64{}
	for _, p := range points {
		v, _ := p.Attributes.Value(key)
		out[v.Emit()] += p.Value
	}
	return out
}

func TestMiddleware_TracesAndMeasures(t *testing.T) {
	t.Parallel()
	hs := []queuemax.Handler{
		queuemax.Define("t.OK", queuemax.TaskOptions{}, func(ctx context.Context, _ struct{}) error {
			if !trace.SpanContextFromContext(ctx).IsValid() {
				return errors.New("handler context carries no span")
			}
			return nil
		}),
		queuemax.Define("t.Fail", queuemax.TaskOptions{MaxRetries: queuemax.Ptr(0)}, func(context.Context, struct{}) error {
			return errors.New("boom")
		}),
	}
	b := setup(t, Options{}, queuemax.Config{Shards: 2, Handlers: hs})
	completed, _ := b.c.Subscribe(queuemax.EventCompleted) // closed by Close
	dead, _ := b.c.Subscribe(queuemax.EventFailed)         // closed by Close

	reqCtx, req := b.tp.Tracer("test").Start(b.ctx, "request")
	okID, err := b.c.Enqueue(reqCtx, "t.OK", struct{}{}, queuemax.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.c.Enqueue(reqCtx, "t.Fail", struct{}{}, queuemax.Opts{}); err != nil {
		t.Fatal(err)
	}
	req.End()
	j, err := b.c.Job(b.ctx, okID)
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]map[string]string
	if err := json.Unmarshal(j.Metadata, &meta); err != nil || meta[MetadataKey]["traceparent"] == "" {
		t.Fatalf("job metadata = %s (%v), want a traceparent under %q", j.Metadata, err, MetadataKey)
	}

	stop := queuemaxtest.Run(t, b.c)
	<-completed
	<-dead
	stop()

	spans := b.spans.GetSpans()
	request := spanNamed(t, spans, "request")
	enq := spanNamed(t, spans, "enqueue t.OK")
	proc := spanNamed(t, spans, "process t.OK")
	if enq.Parent.SpanID() != request.SpanContext.SpanID() || enq.SpanKind != trace.SpanKindProducer {
		t.Errorf("enqueue span: parent %s kind %v, want the request span %s and producer", enq.Parent.SpanID(), enq.SpanKind, request.SpanContext.SpanID())
	}
	if proc.SpanContext.TraceID() != request.SpanContext.TraceID() || proc.Parent.SpanID() != enq.SpanContext.SpanID() ||
		proc.SpanKind != trace.SpanKindConsumer {
		t.Errorf("process span: trace %s parent %s kind %v; want trace %s, parent %s (the enqueue span), consumer",
			proc.SpanContext.TraceID(), proc.Parent.SpanID(), proc.SpanKind, request.SpanContext.TraceID(), enq.SpanContext.SpanID())
	}
	a := attrs(proc)
	if a[AttrTask].AsString() != "t.OK" || a[AttrJobID].AsInt64() != int64(okID) || a[AttrAttempt].AsInt64() != 1 ||
		a[AttrOutcome].AsString() != "completed" {
		t.Errorf("process span attributes = %v", proc.Attributes)
	}
	fail := spanNamed(t, spans, "process t.Fail")
	if attrs(fail)[AttrOutcome].AsString() != "dead_lettered" || fail.Status.Code != codes.Error || len(fail.Events) == 0 {
		t.Errorf("failed span: outcome %v status %v events %d; want dead_lettered, Error and the recorded error",
			attrs(fail)[AttrOutcome], fail.Status, len(fail.Events))
	}

	m := metrics(t, b.reader)
	for name, want := range map[string]map[string]int64{
		"queuemax.jobs.enqueued":      {"t.OK": 1, "t.Fail": 1},
		"queuemax.jobs.completed":     {"t.OK": 1},
		"queuemax.jobs.failed":        {"t.Fail": 1},
		"queuemax.jobs.dead_lettered": {"t.Fail": 1},
	} {
		got := sumBy(t, m[name], AttrTask)
		for task, n := range want {
			if got[task] != n {
				t.Errorf("%s{task=%s} = %d, want %d", name, task, got[task], n)
			}
		}
	}
	runs, ok := m["queuemax.job.run.duration"].(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("queuemax.job.run.duration = %T, want a histogram", m["queuemax.job.run.duration"])
	}
	byOutcome := map[string]uint64{}
	for _, p := range runs.DataPoints {
		v, _ := p.Attributes.Value(AttrOutcome)
		byOutcome[v.AsString()] += p.Count
	}
	if byOutcome["completed"] != 1 || byOutcome["dead_lettered"] != 1 {
		t.Errorf("run.duration counts by outcome = %v, want completed 1, dead_lettered 1", byOutcome)
	}
	waits := m["queuemax.job.queue.wait"].(metricdata.Histogram[float64])
	var nWait uint64
	for _, p := range waits.DataPoints {
		nWait += p.Count
	}
	if nWait != 2 {
		t.Errorf("queue.wait count = %d, want 2", nWait)
	}
	s, err := b.c.Stats(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	byStatus := sumBy(t, m["queuemax.jobs"], "queuemax.job.status")
	if byStatus["failed"] != s.Failed || byStatus["pending"] != s.Pending || s.Failed != 1 {
		t.Errorf("queuemax.jobs by status = %v; Stats failed=%d pending=%d", byStatus, s.Failed, s.Pending)
	}
	if got := sumBy(t, m["queuemax.circuit_breaker.state"], "state"); got["closed"] != 2 {
		t.Errorf("circuit_breaker.state = %v, want both breakers closed", got)
	}
}

func TestMiddleware_LinkOnly(t *testing.T) {
	t.Parallel()
	h := queuemax.Define("t.OK", queuemax.TaskOptions{}, func(context.Context, struct{}) error { return nil })
	b := setup(t, Options{LinkOnly: true}, queuemax.Config{Shards: 1, Handlers: []queuemax.Handler{h}})
	completed, _ := b.c.Subscribe(queuemax.EventCompleted) // closed by Close
	reqCtx, req := b.tp.Tracer("test").Start(b.ctx, "request")
	if _, err := b.c.Enqueue(reqCtx, "t.OK", struct{}{}, queuemax.Opts{}); err != nil {
		t.Fatal(err)
	}
	req.End()
	stop := queuemaxtest.Run(t, b.c)
	<-completed
	stop()
	spans := b.spans.GetSpans()
	enq := spanNamed(t, spans, "enqueue t.OK")
	proc := spanNamed(t, spans, "process t.OK")
	if proc.Parent.IsValid() || proc.SpanContext.TraceID() == enq.SpanContext.TraceID() {
		t.Errorf("process span: parent %v trace %s; want a new root trace", proc.Parent, proc.SpanContext.TraceID())
	}
	if len(proc.Links) != 1 || proc.Links[0].SpanContext.SpanID() != enq.SpanContext.SpanID() ||
		proc.Links[0].SpanContext.TraceID() != enq.SpanContext.TraceID() {
		t.Errorf("process span links = %+v, want one link to the enqueue span %s", proc.Links, enq.SpanContext.SpanID())
	}
}

// exportedSpan is what the child writes for each span it ended.
type exportedSpan struct {
	Name, TraceID, SpanID, ParentSpanID string
}

// childMain runs the enqueued job in a second process and writes the spans
// it made to the file named by childOutEnv.
func childMain() int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	mw, err := NewMiddleware(Options{TracerProvider: tp})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	h := queuemax.Define("t.Remote", queuemax.TaskOptions{}, func(context.Context, struct{}) error { return nil })
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: os.Getenv(childDirEnv), Handlers: []queuemax.Handler{h},
		Middleware: []queuemax.JobMiddleware{mw}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	runCtx, stop := context.WithCancel(ctx)
	completed, _ := c.Subscribe(queuemax.EventCompleted) // closed by Close
	go func() { <-completed; stop() }()
	if err := c.Run(runCtx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "child: timed out waiting for the job")
		return 1
	}
	var out []exportedSpan
	for _, s := range spans.GetSpans() {
		out = append(out, exportedSpan{Name: s.Name, TraceID: s.SpanContext.TraceID().String(),
			SpanID: s.SpanContext.SpanID().String(), ParentSpanID: s.Parent.SpanID().String()})
	}
	b, _ := json.Marshal(out)
	if err := os.WriteFile(os.Getenv(childOutEnv), b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func TestMiddleware_TraceAcrossProcesses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := setup(t, Options{}, queuemax.Config{Dir: dir, Shards: 2})
	reqCtx, req := b.tp.Tracer("test").Start(b.ctx, "request")
	if _, err := b.c.Enqueue(reqCtx, "t.Remote", struct{}{}, queuemax.Opts{}); err != nil {
		t.Fatal(err)
	}
	req.End()
	out := filepath.Join(t.TempDir(), "spans.json")
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=run", childDirEnv+"="+dir, childOutEnv+"="+out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, msg)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var remote []exportedSpan
	if err := json.Unmarshal(raw, &remote); err != nil || len(remote) != 1 || remote[0].Name != "process t.Remote" {
		t.Fatalf("child spans = %s (%v), want one process t.Remote span", raw, err)
	}
	spans := b.spans.GetSpans()
	request := spanNamed(t, spans, "request")
	enq := spanNamed(t, spans, "enqueue t.Remote")
	if got, want := remote[0].TraceID, request.SpanContext.TraceID().String(); got != want {
		t.Errorf("child's span trace = %s, want the enqueuing request's %s", got, want)
	}
	if got, want := remote[0].ParentSpanID, enq.SpanContext.SpanID().String(); got != want {
		t.Errorf("child's span parent = %s, want the enqueue span %s", got, want)
	}
}

// TestMiddleware_CountsEveryEvent: the event counters lose no event, even
// while a Subscribe channel drops them, and a collection sees them at once.
func TestMiddleware_CountsEveryEvent(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{}, queuemax.Config{Shards: 2})
	_, cancel := b.c.SubscribeConfig(&queuemax.SubscribeConfig{ChanSize: 1}) // never read: drops
	defer cancel()
	ps := make([]queuemax.EnqueueParams, 2000)
	for i := range ps {
		ps[i] = queuemax.EnqueueParams{Task: "t.A", Payload: struct{}{}}
	}
	if _, err := b.c.EnqueueMany(b.ctx, ps); err != nil {
		t.Fatal(err)
	}
	if got := sumBy(t, metrics(t, b.reader)["queuemax.jobs.enqueued"], AttrTask)["t.A"]; got != 2000 {
		t.Errorf("queuemax.jobs.enqueued{t.A} = %d, want 2000", got)
	}
	if d := b.c.EventStats().Dropped; d == 0 {
		t.Error("EventStats().Dropped = 0; the channel was meant to overflow")
	}
}
