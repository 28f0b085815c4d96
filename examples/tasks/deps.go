package tasks

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Deps are the services the tasks use. The zero Deps works: email goes
// nowhere useful (SendEmail fails), webhooks use http.DefaultClient,
// cleanup deletes nothing and the clock is time.Now.
type Deps struct {
	// Mailer delivers SendEmail's messages.
	Mailer Mailer
	// HTTP sends CallWebhook's requests. Nil means http.DefaultClient.
	HTTP *http.Client
	// Retention is what CleanupOldData trims. Nil means nothing to trim.
	Retention Retention
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// MonitorURL is where PingMonitor reports that the workers are alive
	// (a dead man's switch such as healthchecks.io). Empty means nowhere.
	MonitorURL string
}

type depsKey struct{}

// WithDeps returns a copy of ctx that carries d to the tasks.
func WithDeps(ctx context.Context, d Deps) context.Context {
	return context.WithValue(ctx, depsKey{}, d)
}

// depsFrom returns the Deps in ctx, with defaults filled in.
func depsFrom(ctx context.Context) Deps {
	d, _ := ctx.Value(depsKey{}).(Deps)
	if d.HTTP == nil {
		d.HTTP = http.DefaultClient
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return d
}

// ErrNoMailer is returned by SendEmail when the context carries no Mailer.
var ErrNoMailer = errors.New("tasks: no mailer in context (use WithDeps)")

// Message is one email.
type Message struct {
	To      string
	Subject string
	SentAt  time.Time
}

// Mailer delivers messages.
type Mailer interface {
	Send(ctx context.Context, m Message) error
}

// Retention deletes data older than a cutoff.
type Retention interface {
	DeleteBefore(ctx context.Context, cutoff time.Time) (int, error)
}

// Outbox is an in-memory Mailer and Retention, for tests and examples. Its
// zero value is ready to use; it is safe for concurrent use.
type Outbox struct {
	mu   sync.Mutex
	msgs []Message
}

// Send stores m.
func (o *Outbox) Send(ctx context.Context, m Message) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.msgs = append(o.msgs, m)
	return nil
}

// Messages returns the stored messages sorted by recipient, then subject.
func (o *Outbox) Messages() []Message {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := slices.Clone(o.msgs)
	slices.SortFunc(out, func(a, b Message) int {
		if a.To != b.To {
			return compare(a.To, b.To)
		}
		return compare(a.Subject, b.Subject)
	})
	return out
}

// DeleteBefore deletes the messages sent before cutoff.
func (o *Outbox) DeleteBefore(ctx context.Context, cutoff time.Time) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(o.msgs)
	o.msgs = slices.DeleteFunc(o.msgs, func(m Message) bool { return m.SentAt.Before(cutoff) })
	return n - len(o.msgs), nil
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
