package steps_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/examples/steps"
)

// fakeShop records every side effect. Its mail server fails the first
// mail, and its import fails once at row 250.
type fakeShop struct {
	mu       sync.Mutex
	calls    []string // the order's side effects
	imports  []string // the import's failures
	mailDown bool
	failRow  int
	imported map[int]int
}

func (f *fakeShop) log(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

func (f *fakeShop) Charge(_ context.Context, o steps.Order) (steps.Receipt, error) {
	f.log("charge " + o.ID)
	return steps.Receipt{Number: "R-" + o.ID, AmountCents: o.AmountCents}, nil
}

func (f *fakeShop) Ship(_ context.Context, o steps.Order) (string, error) {
	f.log("ship " + o.ID)
	return "PK-" + o.ID, nil
}

func (f *fakeShop) Mail(_ context.Context, to, text string) error {
	f.mu.Lock()
	down := f.mailDown
	f.mailDown = false
	f.mu.Unlock()
	if down {
		f.log("mail " + to + ": server down")
		return queuemax.RetryAfter(time.Millisecond, errors.New("smtp 421: try again later"))
	}
	f.log("mail " + to + ": " + text)
	return nil
}

func (f *fakeShop) Import(_ context.Context, _ string, row int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if row == f.failRow {
		f.failRow = -1
		f.imports = append(f.imports, fmt.Sprintf("import failed at row %d", row))
		return queuemax.RetryAfter(time.Millisecond, errors.New("disk full"))
	}
	f.imported[row]++
	return nil
}

// Example runs an order whose mail fails once and an import that fails
// once half-way: the retries charge and ship nothing again, and the import
// resumes from the last position it recorded.
func Example() {
	dir, err := os.MkdirTemp("", "queuemax-steps-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	shop := &fakeShop{mailDown: true, failRow: 250, imported: map[int]int{}}
	ctx := steps.WithShop(context.Background(), shop)
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: dir, Shards: 2, Handlers: steps.Handlers(),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	t := steps.New(c)

	events, unsubscribe := c.Subscribe(queuemax.EventCompleted)
	defer unsubscribe()
	order, err := t.ProcessOrder.Delay(ctx, steps.Order{ID: "42", AmountCents: 4200, Email: "ada@example.com"})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := t.ImportRows.Delay(ctx, "rows.csv", 400); err != nil {
		fmt.Println(err)
		return
	}

	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- c.Run(runCtx) }()
	for done := 0; done < 2; done++ {
		<-events
	}
	stop()
	if err := <-ran; err != nil {
		fmt.Println("run:", err)
	}

	for _, call := range append(shop.calls, shop.imports...) {
		fmt.Println(call)
	}
	once := true
	for row := range 400 {
		// Rows 200 to 249 were imported before the failure, after the last
		// position recorded (200), so they ran twice; every other row once.
		want := 1
		if row >= 200 && row < 250 {
			want = 2
		}
		once = once && shop.imported[row] == want
	}
	fmt.Println("rows imported once, but for the 50 after the last recorded position:", once)
	summary, err := t.ProcessOrder.Result(ctx, order)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("order result:", summary)
	// Output:
	// charge 42
	// ship 42
	// mail ada@example.com: server down
	// mail ada@example.com: receipt R-42, parcel PK-42
	// import failed at row 250
	// rows imported once, but for the 50 after the last recorded position: true
	// order result: R-42 PK-42
}
