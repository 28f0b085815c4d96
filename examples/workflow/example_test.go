package workflow_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/examples/workflow"
)

// outbox is a Mailer that keeps what Mail sends.
type outbox struct {
	mu   sync.Mutex
	sent []string
}

func (o *outbox) Send(_ context.Context, to, text string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sent = append(o.sent, to+": "+text)
	return nil
}

// Example stores the order workflow charge → ship → mail on the embedded
// SQLite runtime, where mail takes the receipt Charge returned and the
// parcel Ship returned, runs it to its end and prints what each step did.
func Example() {
	dir, err := os.MkdirTemp("", "queuemax-workflow-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	mail := &outbox{}
	ctx := workflow.WithMailer(context.Background(), mail)
	c, err := queuemax.Open(ctx, queuemax.Config{
		Dir:      dir,
		Shards:   2,
		Handlers: workflow.Handlers(),
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	t := workflow.New(c)

	order := workflow.Order{ID: "42", AmountCents: 4200, Email: "ada@example.com"}
	wf := queuemax.NewWorkflow("order-42")
	charge := t.Charge.Step(wf, "charge", queuemax.Value(order)) // a StepRef[Receipt]
	ship := t.Ship.Step(wf, "ship", queuemax.Value(order), queuemax.After(charge.Name()))
	t.Mail.Step(wf, "mail", queuemax.Value(order.Email), queuemax.From(charge), queuemax.From(ship))
	// queuemax.From(ship) in place of the receipt would not compile: ship's
	// task returns a Parcel, not a Receipt.

	// Subscribe before storing the workflow, so that its end is not missed.
	events, unsubscribe := c.SubscribeConfig(&queuemax.SubscribeConfig{ChanSize: 64,
		Kinds: []queuemax.EventKind{queuemax.EventWorkflowCompleted, queuemax.EventWorkflowFailed}})
	defer unsubscribe()
	id, err := c.EnqueueWorkflow(ctx, wf)
	if err != nil {
		fmt.Println("enqueue:", err)
		return
	}

	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- c.Run(runCtx) }()
	for done := false; !done; {
		select {
		case e := <-events:
			done = queuemax.WorkflowID(e.Workflow) == id
		case err := <-ran:
			fmt.Println("run returned early:", err)
			stop()
			return
		}
	}
	stop()
	if err := <-ran; err != nil {
		fmt.Println("run:", err)
	}

	info, err := c.Workflow(ctx, id)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("workflow %s: %s\n", info.Name, info.Status)
	for _, s := range info.Steps {
		fmt.Printf("  %-6s %s\n", s.Name, s.Status)
	}
	receipt, err := queuemax.WorkflowResult(ctx, c, id, charge) // a Receipt, typed
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("charge returned %+v\n", receipt)
	fmt.Println(mail.sent[0])
	// Output:
	// workflow order-42: completed
	//   charge completed
	//   ship   completed
	//   mail   completed
	// charge returned {Number:R-42 AmountCents:4200}
	// ada@example.com: receipt R-42 for 42.00 EUR, parcel post PK-42
}
