package queuemaxtest_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxtest"
)

// welcomeArgs is the payload of the example's task, as queuemax-gen would
// generate it for func SendWelcome(ctx context.Context, email string) error.
type welcomeArgs struct {
	Email string `json:"email"`
}

// signup is the code under test: it enqueues a welcome email.
func signup(ctx context.Context, c *queuemax.Client, email string) error {
	_, err := c.Enqueue(ctx, "example.SendWelcome", welcomeArgs{Email: email}, queuemax.Opts{})
	return err
}

// Example tests code that enqueues a job: it asserts the job and its
// arguments, then works it synchronously. In a real test, pass the test's
// t where this example passes its stand-in.
func Example() {
	t := newExampleT() // a *testing.T in a real test
	defer t.finish()

	sendWelcome := queuemax.Define("example.SendWelcome", queuemax.TaskOptions{},
		func(ctx context.Context, a welcomeArgs) error {
			fmt.Println("sending welcome to", a.Email)
			return nil
		})
	c := queuemaxtest.NewClient(t, queuemax.Config{Handlers: []queuemax.Handler{sendWelcome}})

	if err := signup(t.Context(), c, "ada@example.com"); err != nil {
		t.Fatalf("signup: %v", err)
	}
	job := queuemaxtest.RequireEnqueued[welcomeArgs](t, c, nil)
	fmt.Println("enqueued for", job.Args.Email)

	for _, w := range queuemaxtest.Drain(t, c) {
		fmt.Println(w.Job.Task, w.Outcome)
	}
	queuemaxtest.RequireNotEnqueued[welcomeArgs](t, c, nil)
	// Output:
	// enqueued for ada@example.com
	// sending welcome to ada@example.com
	// example.SendWelcome completed
}

// exampleT stands in for the *testing.T an example does not have.
type exampleT struct {
	testing.TB
	cleanups []func()
}

func newExampleT() *exampleT { return &exampleT{} }

func (t *exampleT) Helper()                  {}
func (t *exampleT) Context() context.Context { return context.Background() }
func (t *exampleT) Output() io.Writer        { return io.Discard }
func (t *exampleT) Cleanup(fn func())        { t.cleanups = append(t.cleanups, fn) }
func (t *exampleT) Errorf(format string, a ...any) {
	fmt.Printf("error: "+format+"\n", a...)
}
func (t *exampleT) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
func (t *exampleT) TempDir() string {
	dir, err := os.MkdirTemp("", "queuemaxtest-example")
	if err != nil {
		panic(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// finish runs the cleanups, last registered first, as testing does.
func (t *exampleT) finish() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
