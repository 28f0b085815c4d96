package enqueue

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queuemax/queuemax/internal/codec"
	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

func ptr[T any](v T) *T { return &v }

func testResolver() *Resolver {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return &Resolver{Shards: 4, MaxRetries: 3, RetryDelay: time.Minute, Now: func() time.Time { return t0 },
		Works: func(q string) bool { return q == "mail" }}
}

// TestResolve_Layers checks the order of resolution: the enqueue's options
// over the task's defaults over the resolver's.
func TestResolve_Layers(t *testing.T) {
	t.Parallel()
	r := testResolver()
	raw := json.RawMessage(`{"a":1}`)
	p, err := r.Resolve("t.A", raw, &Defaults{}, &Opts{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Priority != queuemaxtype.PriorityLow || p.MaxAttempts != 4 || p.RetryDelay != time.Minute || p.Queue != "" ||
		p.Unique != nil || !p.Now.Equal(r.Now()) || p.Task != "t.A" || string(p.Payload) != `{"a":1}` {
		t.Errorf("defaults: %+v", p)
	}
	def := &Defaults{Priority: queuemaxtype.PriorityMedium, MaxRetries: ptr(1), RetryDelay: time.Second, Queue: "mail", Tags: []string{"x"}}
	p, err = r.Resolve("t.A", raw, def, &Opts{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Priority != queuemaxtype.PriorityMedium || p.MaxAttempts != 2 || p.RetryDelay != time.Second || p.Queue != "mail" ||
		strings.Join(p.Tags, ",") != "x" {
		t.Errorf("task defaults: %+v", p)
	}
	key := int64(9)
	o := &Opts{Priority: ptr(queuemaxtype.PriorityHigh), MaxRetries: ptr(0), Key: &key, Queue: "default", Tags: []string{},
		Timeout: time.Second, Metadata: map[string]any{"m": 1}}
	p, err = r.Resolve("t.A", raw, def, o)
	if err != nil {
		t.Fatal(err)
	}
	if p.Priority != queuemaxtype.PriorityHigh || p.MaxAttempts != 1 || p.Queue != "" || len(p.Tags) != 0 ||
		p.Timeout != time.Second || string(p.Metadata) != `{"m":1}` || p.PartitionKey != &key {
		t.Errorf("enqueue options: %+v", p)
	}
	if prio, attempts := r.Base(def); prio != queuemaxtype.PriorityMedium || attempts != 2 {
		t.Errorf("Base(task defaults) = %d, %d; want the task's priority 1 and 2 attempts", prio, attempts)
	}
	if _, attempts := r.Base(&Defaults{}); attempts != 4 {
		t.Errorf("Base(no defaults) = %d attempts; want the resolver's 3 retries + 1", attempts)
	}
	tagged := &Defaults{Tags: []string{"y"}}
	p, _ = r.Resolve("t.A", raw, tagged, &Opts{})
	tagged.Tags[0] = "changed"
	if p.Tags[0] != "y" {
		t.Error("the resolved tags share the task defaults' array")
	}
}

// TestResolve_Errors checks that every bad option is refused with the
// error that names it.
func TestResolve_Errors(t *testing.T) {
	t.Parallel()
	r := testResolver()
	raw := json.RawMessage(`{}`)
	for name, tc := range map[string]struct {
		def  Defaults
		o    Opts
		want error
	}{
		"priority":          {o: Opts{Priority: ptr(queuemaxtype.Priority(3))}, want: ErrInvalidPriority},
		"negative retries":  {o: Opts{MaxRetries: ptr(-1)}, want: ErrInvalidRetries},
		"too many retries":  {def: Defaults{MaxRetries: ptr(MaxRetriesLimit + 1)}, want: ErrInvalidRetries},
		"timeout":           {o: Opts{Timeout: -time.Second}, want: ErrInvalidTimeout},
		"tag":               {o: Opts{Tags: []string{"a b"}}, want: ErrInvalidTag},
		"metadata":          {o: Opts{Metadata: map[string]any{"f": func() {}}}, want: codec.ErrInvalidPayload},
		"queue name":        {o: Opts{Queue: "Bad Name"}, want: store.ErrInvalidQueue},
		"unworked queue":    {def: Defaults{Queue: "reports"}, want: ErrUnknownQueue},
		"unique by key":     {def: Defaults{Unique: queuemaxtype.UniqueOpts{ByKey: true}}, want: ErrInvalidUnique},
		"unique args, key":  {o: Opts{Unique: &queuemaxtype.UniqueOpts{ByArgs: true, ByKey: true}}, want: ErrInvalidUnique},
		"unique states":     {o: Opts{Unique: &queuemaxtype.UniqueOpts{ByArgs: true, ByState: []queuemaxtype.Status{"pending"}}}, want: ErrInvalidUnique},
		"unique state only": {o: Opts{Unique: &queuemaxtype.UniqueOpts{ByState: []queuemaxtype.Status{"pending", "scheduled", "processing"}}}, want: ErrInvalidUnique},
	} {
		if _, err := r.Resolve("t.A", raw, &tc.def, &tc.o); !errors.Is(err, tc.want) {
			t.Errorf("%s: Resolve = %v; want %v", name, err, tc.want)
		}
	}
}

// TestResolve_UniqueKey checks what a unique key depends on: key order
// and spacing of the arguments do not matter, the task, partition key
// and period window do; an enqueue's UniqueKey makes a job unique by key.
func TestResolve_UniqueKey(t *testing.T) {
	t.Parallel()
	r := testResolver()
	byArgs := &Defaults{Unique: queuemaxtype.UniqueOpts{ByArgs: true}}
	key := func(task, payload string, def *Defaults, o Opts) string {
		t.Helper()
		p, err := r.Resolve(task, json.RawMessage(payload), def, &o)
		if err != nil || p.Unique == nil {
			t.Fatalf("Resolve(%s, %s) = %+v, %v", task, payload, p.Unique, err)
		}
		return p.Unique.Key
	}
	a := key("t.A", `{"x":1,"y":[1,2]}`, byArgs, Opts{})
	if b := key("t.A", `{ "y": [1, 2], "x": 1 }`, byArgs, Opts{}); a != b {
		t.Error("argument order or spacing changed the unique key")
	}
	pk := int64(1)
	for name, other := range map[string]string{
		"task":          key("t.B", `{"x":1,"y":[1,2]}`, byArgs, Opts{}),
		"arguments":     key("t.A", `{"x":2,"y":[1,2]}`, byArgs, Opts{}),
		"partition key": key("t.A", `{"x":1,"y":[1,2]}`, byArgs, Opts{Key: &pk}),
		"unique key":    key("t.A", `{"x":1,"y":[1,2]}`, byArgs, Opts{UniqueKey: "k"}),
	} {
		if other == a {
			t.Errorf("a different %s kept the unique key", name)
		}
	}
	hourly := &Defaults{Unique: queuemaxtype.UniqueOpts{ByPeriod: time.Hour}}
	now := r.Now()
	if key("t.A", `{}`, hourly, Opts{RunAt: now.Add(time.Minute)}) != key("t.A", `{}`, hourly, Opts{}) {
		t.Error("two run times in one hour window have different keys")
	}
	if key("t.A", `{}`, hourly, Opts{RunAt: now.Add(time.Hour)}) == key("t.A", `{}`, hourly, Opts{}) {
		t.Error("two hour windows share a key")
	}
	p, _ := r.Resolve("t.A", json.RawMessage(`{}`), byArgs, &Opts{})
	if got := p.Unique.States; len(got) != 3 {
		t.Errorf("default unique states %v; want pending, scheduled, processing", got)
	}
}

// TestApply checks that enqueue middleware's changes are checked as
// Resolve checks them and copied into the job.
func TestApply(t *testing.T) {
	t.Parallel()
	r := testResolver()
	p, err := r.Resolve("t.A", json.RawMessage(`{}`), &Defaults{}, &Opts{})
	if err != nil {
		t.Fatal(err)
	}
	key := int64(5)
	ok := queuemaxtype.InsertJob{Task: "t.B", Payload: json.RawMessage(`{"b":1}`), Priority: queuemaxtype.PriorityHigh,
		MaxAttempts: 2, Key: &key, Metadata: json.RawMessage(`{"m":1}`)}
	for name, tc := range map[string]struct {
		change func(j *queuemaxtype.InsertJob)
		want   error
	}{
		"payload":  {func(j *queuemaxtype.InsertJob) { j.Payload = json.RawMessage(`[1]`) }, codec.ErrInvalidPayload},
		"metadata": {func(j *queuemaxtype.InsertJob) { j.Metadata = json.RawMessage(`"m"`) }, codec.ErrInvalidPayload},
		"priority": {func(j *queuemaxtype.InsertJob) { j.Priority = 7 }, ErrInvalidPriority},
		"attempts": {func(j *queuemaxtype.InsertJob) { j.MaxAttempts = 0 }, ErrInvalidRetries},
	} {
		j, q := ok, p
		tc.change(&j)
		if err := Apply(&q, &j); !errors.Is(err, tc.want) {
			t.Errorf("%s: Apply = %v; want %v", name, err, tc.want)
		}
	}
	j, q := ok, p
	if err := Apply(&q, &j); err != nil {
		t.Fatal(err)
	}
	if q.Task != "t.B" || string(q.Payload) != `{"b":1}` || q.Priority != queuemaxtype.PriorityHigh || q.MaxAttempts != 2 ||
		q.PartitionKey != &key || string(q.Metadata) != `{"m":1}` {
		t.Errorf("Apply copied %+v", q)
	}
	u, err := r.Resolve("t.A", json.RawMessage(`{}`), &Defaults{Unique: queuemaxtype.UniqueOpts{ByArgs: true}}, &Opts{})
	if err != nil {
		t.Fatal(err)
	}
	if err := Apply(&u, &queuemaxtype.InsertJob{Payload: json.RawMessage(`{}`), MaxAttempts: 1, Key: &key}); !errors.Is(err, ErrInvalidUnique) {
		t.Errorf("a changed partition key of a unique job: %v; want ErrInvalidUnique", err)
	}
}

// TestPlace checks where Place puts jobs: a partition key's shard, a
// unique key's (the same for every job of the key), and a call's keyless
// jobs together.
func TestPlace(t *testing.T) {
	t.Parallel()
	r := testResolver()
	k1, k2 := int64(1), int64(6)
	ps := []store.InsertParams{{PartitionKey: &k1}, {PartitionKey: &k2}, {Unique: &store.UniqueParams{Key: "00000000000000030000"}}}
	r.Place(ps)
	if ps[0].Shard != 1 || ps[1].Shard != 2 || ps[2].Shard != 3 {
		t.Errorf("shards %d %d %d; want 1 (key 1), 2 (key 6 mod 4), 3 (unique key ...03)", ps[0].Shard, ps[1].Shard, ps[2].Shard)
	}
}
