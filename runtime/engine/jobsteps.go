package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// Job steps (queuemax.Step, Do, SetCursor): the resumable parts of one
// handler, not workflow steps (which are jobs; workflow.go). Execute
// attaches an attempt's JobSteps to the handler's context; nothing is read
// or written until the handler uses a step, so a job without steps costs
// nothing more. The first step of an attempt reads the job's recorded
// progress once; each step's completion and each cursor is one fenced
// write (store.JobProgress).

type (
	jobStepsKey struct{}
	stepRunKey  struct{}
	inStepKey   struct{}
	stepLogKey  struct{}
)

// JobSteps is one attempt's job-step state: the progress recorded by this
// and earlier attempts, as far as this attempt knows it. It is safe for
// concurrent use (a handler may run steps in goroutines).
type JobSteps struct {
	st  store.Store
	job *Job
	x   *Executor
	log *StepLog

	mu     sync.Mutex
	loaded bool
	steps  map[string]store.JobStep // as recorded (by this attempt's committed writes too)
	seqs   map[string]int           // each step's position, kept from its first write
	next   int                      // the position a new step gets
}

// StepLog records which job steps one execution ran and which it skipped
// because an earlier attempt had completed them (Client.Work's result).
type StepLog struct {
	mu      sync.Mutex
	Ran     []string
	Skipped []string
}

// WithStepLog returns ctx that makes the execution it runs record its
// steps in log.
func WithStepLog(ctx context.Context, log *StepLog) context.Context {
	return context.WithValue(ctx, stepLogKey{}, log)
}

// Names returns the steps ran and skipped so far.
func (l *StepLog) Names() (ran, skipped []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.Ran...), append([]string(nil), l.Skipped...)
}

func (l *StepLog) add(name string, skipped bool) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if skipped {
		l.Skipped = append(l.Skipped, name)
	} else {
		l.Ran = append(l.Ran, name)
	}
}

// withJobSteps returns ctx carrying a fresh JobSteps for j's attempt.
func (x *Executor) withJobSteps(ctx context.Context, j *Job) context.Context {
	log, _ := ctx.Value(stepLogKey{}).(*StepLog)
	return context.WithValue(ctx, jobStepsKey{}, &JobSteps{st: x.cfg.Store, job: j, x: x, log: log})
}

// stepRun is one call of the handler: step names are unique within it
// (an in-process retry calls the handler again, with a new run).
type stepRun struct {
	js   *JobSteps
	mu   sync.Mutex
	seen map[string]string // name → where it was used first
}

// newStepRun returns ctx with a new run of the attempt's JobSteps, if ctx
// carries them.
func newStepRun(ctx context.Context) context.Context {
	js, ok := ctx.Value(jobStepsKey{}).(*JobSteps)
	if !ok {
		return ctx
	}
	return context.WithValue(ctx, stepRunKey{}, &stepRun{js: js})
}

// StepRun is a handler call's access to its job's steps.
type StepRun struct{ r *stepRun }

// StepRunFrom returns the job steps of the handler call ctx belongs to,
// or false when no handler runs with ctx.
func StepRunFrom(ctx context.Context) (StepRun, bool) {
	r, ok := ctx.Value(stepRunKey{}).(*stepRun)
	return StepRun{r}, ok
}

// current is the step whose function runs with a context.
type current struct {
	name   string
	result reflect.Type // the step's result type; nil for Do
	viaTx  *atomic.Bool // set when its result was recorded in a transaction
}

// InStep returns ctx for the function of step name, whose result has type
// result (nil: none).
func InStep(ctx context.Context, name string, result reflect.Type) context.Context {
	return context.WithValue(ctx, inStepKey{}, &current{name: name, result: result, viaTx: new(atomic.Bool)})
}

// CurrentStep returns the name of the step whose function runs with ctx
// and its result type.
func CurrentStep(ctx context.Context) (name string, result reflect.Type, ok bool) {
	c, ok := ctx.Value(inStepKey{}).(*current)
	if !ok {
		return "", nil, false
	}
	return c.name, c.result, true
}

// RecordedInTx reports whether the function of the step ctx was made for
// (InStep) recorded its result in a transaction (SetTx).
func RecordedInTx(ctx context.Context) bool {
	c, ok := ctx.Value(inStepKey{}).(*current)
	return ok && c.viaTx.Load()
}

// Begin starts step name, used at where (file:line), in this handler call.
// It returns the step's stored result and true when an earlier attempt (or
// this one) completed it. A name used before in this call is an error
// naming both places.
func (s StepRun) Begin(ctx context.Context, name, where string) (json.RawMessage, bool, error) {
	if err := store.CheckStepName(name); err != nil {
		return nil, false, err
	}
	r := s.r
	r.mu.Lock()
	if first, dup := r.seen[name]; dup {
		r.mu.Unlock()
		return nil, false, fmt.Errorf("%w: %q is used at %s and again at %s", queuemaxtype.ErrDuplicateStep, name, first, where)
	}
	if r.seen == nil {
		r.seen = map[string]string{}
	}
	r.seen[name] = where
	r.mu.Unlock()
	rec, err := r.js.lookup(ctx, name)
	if err != nil {
		return nil, false, err
	}
	done := rec != nil && rec.Done
	r.js.log.add(name, done)
	if done {
		return rec.Result, true, nil
	}
	return nil, false, nil
}

// lookup returns step name's recorded progress (nil if none), reading the
// job's progress at the attempt's first use.
func (js *JobSteps) lookup(ctx context.Context, name string) (*store.JobStep, error) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if !js.loaded {
		steps, err := js.st.Progress(ctx, js.job.ID)
		if err != nil {
			return nil, fmt.Errorf("queuemax: job %d: read its steps' progress: %w", js.job.ID, err)
		}
		js.steps = make(map[string]store.JobStep, len(steps))
		for _, s := range steps {
			js.steps[s.Name] = s
			js.seq(s.Name)
		}
		js.loaded = true
	}
	if s, ok := js.steps[name]; ok {
		return &s, nil
	}
	return nil, nil
}

// seq returns step name's position, giving a new step the next one. The
// caller holds js.mu.
func (js *JobSteps) seq(name string) int {
	if n, ok := js.seqs[name]; ok {
		return n
	}
	if js.seqs == nil {
		js.seqs = map[string]int{}
	}
	js.next++
	js.seqs[name] = js.next
	return js.next
}

// params returns the write of step s, numbered: a step keeps the position
// of its first write.
func (js *JobSteps) params(s store.JobStep) store.ProgressParams {
	js.mu.Lock()
	defer js.mu.Unlock()
	return store.ProgressParams{Lease: Lease(js.job), Step: s, Seq: js.seq(s.Name), Now: js.x.cfg.Now()}
}

// remember records a write that committed.
func (js *JobSteps) remember(p store.ProgressParams) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.steps == nil {
		js.steps = map[string]store.JobStep{}
	}
	js.steps[p.Step.Name] = p.Step
}

// writeTimeout bounds a step's write once the job's context has ended.
const writeTimeout = 30 * time.Second

// write records step s, fenced by the job's lease. A step that ran is
// recorded even when the job's context ended meanwhile (its timeout): the
// write is bounded by writeTimeout instead.
func (js *JobSteps) write(ctx context.Context, s store.JobStep) error {
	p := js.params(s)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if err := js.st.SetProgress(wctx, p); err != nil {
		return fmt.Errorf("queuemax: job %d: record step %q: %w", js.job.ID, s.Name, err)
	}
	js.remember(p)
	return nil
}

// End records step name as completed with result (JSON; nil for none).
func (s StepRun) End(ctx context.Context, name string, result json.RawMessage) error {
	if result == nil {
		result = json.RawMessage("null")
	}
	return s.r.js.write(ctx, store.JobStep{Name: name, Done: true, Result: result})
}

// Cursor returns the cursor step name recorded last, nil if none.
func (s StepRun) Cursor(ctx context.Context, name string) (json.RawMessage, error) {
	rec, err := s.r.js.lookup(ctx, name)
	if err != nil || rec == nil {
		return nil, err
	}
	return rec.Cursor, nil
}

// SetCursor records c as step name's cursor.
func (s StepRun) SetCursor(ctx context.Context, name string, c json.RawMessage) error {
	return s.r.js.write(ctx, store.JobStep{Name: name, Cursor: c})
}

// SetTx records step name's progress inside the application's transaction
// tx: its completion with result when done, else its cursor c. The attempt
// does not learn whether tx commits; a completion recorded so marks the
// step's function (ctx from InStep) as recorded, so that its end writes
// nothing more.
func (s StepRun) SetTx(ctx context.Context, tx any, name string, done bool, v json.RawMessage) error {
	js := s.r.js
	st := store.JobStep{Name: name, Done: done, Cursor: v}
	if done {
		st.Cursor, st.Result = nil, v
		if v == nil {
			st.Result = json.RawMessage("null")
		}
	}
	if err := js.st.SetProgressTx(ctx, tx, js.params(st)); err != nil {
		return fmt.Errorf("queuemax: job %d: record step %q in the transaction: %w", js.job.ID, name, err)
	}
	if c, ok := ctx.Value(inStepKey{}).(*current); ok && done && c.name == name {
		c.viaTx.Store(true)
	}
	return nil
}
