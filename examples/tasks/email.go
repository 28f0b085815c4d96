package tasks

import (
	"context"
	"fmt"
	"net/mail"

	"github.com/queuemax/queuemax"
)

// SendEmail delivers one message through the Mailer of the context's
// Deps. A malformed address fails the job at once, without retries.
//
//queuemax:task priority=2 retries=5 timeout=30s queue=emails
func SendEmail(ctx context.Context, to, subject string) error {
	if _, err := mail.ParseAddress(to); err != nil {
		return queuemax.Permanent(fmt.Errorf("send email: bad address %q: %w", to, err))
	}
	d := depsFrom(ctx)
	if d.Mailer == nil {
		return queuemax.Permanent(ErrNoMailer)
	}
	return d.Mailer.Send(ctx, Message{To: to, Subject: subject, SentAt: d.Now()})
}
