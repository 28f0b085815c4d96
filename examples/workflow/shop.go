package workflow

import (
	"context"
	"errors"
	"fmt"
)

// Order is what a customer bought.
type Order struct {
	ID          string `json:"id"`
	AmountCents int64  `json:"amount_cents"`
	Email       string `json:"email"`
}

// Receipt is what Charge returns.
type Receipt struct {
	Number      string `json:"number"`
	AmountCents int64  `json:"amount_cents"`
}

// Parcel is what Ship returns.
type Parcel struct {
	Carrier  string `json:"carrier"`
	Tracking string `json:"tracking"`
}

// Charge charges the order's amount and returns the receipt.
//
//queuemax:task priority=2 retries=3
func Charge(ctx context.Context, order Order) (Receipt, error) {
	if order.AmountCents <= 0 {
		return Receipt{}, fmt.Errorf("charge order %s: amount %d", order.ID, order.AmountCents)
	}
	return Receipt{Number: "R-" + order.ID, AmountCents: order.AmountCents}, nil
}

// Ship hands the order to a carrier and returns the parcel.
//
//queuemax:task retries=5
func Ship(ctx context.Context, order Order) (Parcel, error) {
	return Parcel{Carrier: "post", Tracking: "PK-" + order.ID}, nil
}

// Mail sends the customer the receipt and the tracking number.
//
//queuemax:task
func Mail(ctx context.Context, to string, receipt Receipt, parcel Parcel) error {
	m, ok := ctx.Value(mailerKey{}).(Mailer)
	if !ok {
		return errors.New("workflow: no mailer in context (use WithMailer)")
	}
	return m.Send(ctx, to, fmt.Sprintf("receipt %s for %d.%02d EUR, parcel %s %s",
		receipt.Number, receipt.AmountCents/100, receipt.AmountCents%100, parcel.Carrier, parcel.Tracking))
}

// Mailer delivers Mail's messages.
type Mailer interface {
	Send(ctx context.Context, to, text string) error
}

type mailerKey struct{}

// WithMailer returns ctx carrying m for Mail.
func WithMailer(ctx context.Context, m Mailer) context.Context {
	return context.WithValue(ctx, mailerKey{}, m)
}
