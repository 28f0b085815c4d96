package queuemax_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/examples/tasks"
	"github.com/queuemax/queuemax/testdata/golden/basic"
	"github.com/queuemax/queuemax/testdata/golden/circuit_off"
	"github.com/queuemax/queuemax/testdata/golden/import_shadowing"
	"github.com/queuemax/queuemax/testdata/golden/missing_generated_file"
	"github.com/queuemax/queuemax/testdata/golden/no_params"
	"github.com/queuemax/queuemax/testdata/golden/param_names"
	"github.com/queuemax/queuemax/testdata/golden/periodic_cron"
	"github.com/queuemax/queuemax/testdata/golden/periodic_every"
	"github.com/queuemax/queuemax/testdata/golden/queue"
	"github.com/queuemax/queuemax/testdata/golden/rate_limit"
	"github.com/queuemax/queuemax/testdata/golden/result_task"
	"github.com/queuemax/queuemax/testdata/golden/retry_on"
	"github.com/queuemax/queuemax/testdata/golden/skip_generated"
	"github.com/queuemax/queuemax/testdata/golden/stale_generated_file"
	"github.com/queuemax/queuemax/testdata/golden/struct_params"
	"github.com/queuemax/queuemax/testdata/golden/tags"
	"github.com/queuemax/queuemax/testdata/golden/unique"
	"github.com/queuemax/queuemax/testdata/golden/workflow"
)

// generatedPackage is one package of generated code: its New and
// Handlers. run says whether the task functions may run (the golden
// cases' do nothing; the examples' send mail and call webhooks).
type generatedPackage struct {
	name     string
	bind     func(*queuemax.Client) any
	handlers func() []queuemax.Handler
	run      bool
}

var generatedPackages = []generatedPackage{
	{"basic", func(c *queuemax.Client) any { return basic.New(c) }, basic.Handlers, true},
	{"circuit_off", func(c *queuemax.Client) any { return circuit_off.New(c) }, circuit_off.Handlers, true},
	{"import_shadowing", func(c *queuemax.Client) any { return import_shadowing.New(c) }, import_shadowing.Handlers, true},
	{"missing_generated_file", func(c *queuemax.Client) any { return missing_generated_file.New(c) }, missing_generated_file.Handlers, true},
	{"no_params", func(c *queuemax.Client) any { return no_params.New(c) }, no_params.Handlers, true},
	{"param_names", func(c *queuemax.Client) any { return param_names.New(c) }, param_names.Handlers, true},
	{"periodic_cron", func(c *queuemax.Client) any { return periodic_cron.New(c) }, periodic_cron.Handlers, true},
	{"periodic_every", func(c *queuemax.Client) any { return periodic_every.New(c) }, periodic_every.Handlers, true},
	{"queue", func(c *queuemax.Client) any { return queue.New(c) }, queue.Handlers, true},
	{"rate_limit", func(c *queuemax.Client) any { return rate_limit.New(c) }, rate_limit.Handlers, true},
	{"result_task", func(c *queuemax.Client) any { return result_task.New(c) }, result_task.Handlers, true},
	{"retry_on", func(c *queuemax.Client) any { return retry_on.New(c) }, retry_on.Handlers, true},
	{"skip_generated", func(c *queuemax.Client) any { return skip_generated.New(c) }, skip_generated.Handlers, true},
	{"stale_generated_file", func(c *queuemax.Client) any { return stale_generated_file.New(c) }, stale_generated_file.Handlers, true},
	{"struct_params", func(c *queuemax.Client) any { return struct_params.New(c) }, struct_params.Handlers, true},
	{"tags", func(c *queuemax.Client) any { return tags.New(c) }, tags.Handlers, true},
	{"unique", func(c *queuemax.Client) any { return unique.New(c) }, unique.Handlers, true},
	{"workflow", func(c *queuemax.Client) any { return workflow.New(c) }, workflow.Handlers, true},
	{"examples/tasks", func(c *queuemax.Client) any { return tasks.New(c) }, tasks.Handlers, false},
}

// TestGenerated_RoundTrip is the property test over the generator's
// output: for every task of every golden case and of examples/tasks,
// random arguments go Delay → store → claim → decode → handler, and the
// handler receives a payload equal to the arguments, on SQLite and on
// PostgreSQL.
func TestGenerated_RoundTrip(t *testing.T) {
	t.Parallel()
	stores := []struct {
		name string
		cfg  func(t *testing.T) queuemax.Config
	}{
		{"sqlite", func(t *testing.T) queuemax.Config { return queuemax.Config{Dir: t.TempDir(), Shards: 2} }},
		{"postgres", func(t *testing.T) queuemax.Config { return queuemax.PGTestConfigs(t)() }},
	}
	const perTask = 6
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			for i, pkg := range generatedPackages {
				t.Run(pkg.name, func(t *testing.T) {
					roundTripPackage(t, st.cfg(t), pkg, perTask, uint64(i))
				})
			}
		})
	}
}

// received is what one handler call decoded.
type received struct {
	val reflect.Value
	err error
}

func roundTripPackage(t *testing.T, cfg queuemax.Config, pkg generatedPackage, perTask int, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 20))
	var mu sync.Mutex
	got := map[queuemax.JobID]received{}
	arrived := make(chan struct{}, 1024)
	argTypes := map[string]reflect.Type{} // task name → its Args type
	byKey := map[string]bool{}            // unique by Opts.UniqueKey
	tasksVal := reflect.ValueOf(pkg.bind(nil)).Elem()
	for i := range tasksVal.NumField() {
		stub := tasksVal.Field(i)
		m := stub.MethodByName("MapArgs")
		if !m.IsValid() {
			continue
		}
		argTypes[stub.MethodByName("Name").Call(nil)[0].String()] = m.Type().In(1).Elem()
	}
	var hs []queuemax.Handler
	for _, h := range pkg.handlers() {
		at, ok := argTypes[h.Name]
		if !ok {
			t.Fatalf("handler %s has no stub with MapArgs", h.Name)
		}
		byKey[h.Name] = h.Options.Unique.ByKey
		orig := h.Func
		run := pkg.run
		h.Func = func(ctx context.Context, job *queuemax.Job) (any, error) {
			v := reflect.New(at)
			err := queuemax.DecodePayload(job.Task, job.Payload, v.Interface())
			mu.Lock()
			got[job.ID] = received{v.Elem(), err}
			mu.Unlock()
			arrived <- struct{}{}
			if err != nil || !run {
				return nil, err
			}
			return orig(ctx, job)
		}
		hs = append(hs, h)
	}
	cfg.Handlers = hs
	cfg.Logger = discard()
	ctx := t.Context()
	c, err := queuemax.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := map[queuemax.JobID]reflect.Value{}
	bound := reflect.ValueOf(pkg.bind(c)).Elem()
	for i := range bound.NumField() {
		stub := bound.Field(i)
		name := stub.MethodByName("Name").Call(nil)[0].String()
		at := argTypes[name]
		if !stub.MethodByName("Delay").IsValid() || at == nil {
			continue
		}
		dt := stub.MethodByName("Delay").Type()
		if dt.NumIn()-1 != at.NumField() {
			t.Fatalf("%s.Delay takes %d arguments after ctx, its Args has %d fields", bound.Type().Field(i).Name, dt.NumIn()-1, at.NumField())
		}
		for j := range perTask {
			delay := stub.MethodByName("Delay")
			if byKey[name] {
				o := reflect.ValueOf(queuemax.Opts{UniqueKey: fmt.Sprint("k", j)})
				delay = stub.MethodByName("With").Call([]reflect.Value{o})[0].MethodByName("Delay")
			}
			in := []reflect.Value{reflect.ValueOf(ctx)}
			args := reflect.New(at).Elem()
			for p := 1; p < dt.NumIn(); p++ {
				v := randValue(r, dt.In(p), false, 0)
				in = append(in, v)
				args.Field(p - 1).Set(v)
			}
			out := delay.Call(in)
			if err, _ := out[1].Interface().(error); err != nil {
				t.Fatalf("%s.Delay%v: %v", bound.Type().Field(i).Name, fmtArgs(in[1:]), err)
			}
			id := out[0].Interface().(queuemax.JobID)
			if _, dup := want[id]; !dup {
				want[id] = args
			}
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	timeout := time.After(60 * time.Second)
	for {
		mu.Lock()
		n := 0
		for id := range want {
			if _, ok := got[id]; ok {
				n++
			}
		}
		mu.Unlock()
		if n == len(want) {
			break
		}
		select {
		case <-arrived:
		case <-timeout:
			t.Fatalf("%d of %d jobs reached their handler", n, len(want))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for id, w := range want {
		g := got[id]
		if g.err != nil {
			t.Errorf("job %s: the handler's decode of %s refused it: %v", id, w.Type(), g.err)
			continue
		}
		if d := cmp.Diff(w.Interface(), g.val.Interface(), sameValue); d != "" {
			t.Errorf("job %s: the handler got another %s (-enqueued +received):\n%s", id, w.Type(), d)
		}
	}
}

func fmtArgs(vs []reflect.Value) string {
	s := "("
	for i, v := range vs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%#v", v.Interface())
	}
	return s + ")"
}
