package steps

import (
	"context"
	"errors"
	"fmt"

	"github.com/queuemax/queuemax"
)

// Order is what ProcessOrder works on.
type Order struct {
	ID          string `json:"id"`
	AmountCents int64  `json:"amount_cents"`
	Email       string `json:"email"`
}

// Receipt is what charging a card returns.
type Receipt struct {
	Number      string `json:"number"`
	AmountCents int64  `json:"amount_cents"`
}

// Shop is the outside world the tasks change: each call is a side effect
// that must happen once per order.
type Shop interface {
	Charge(ctx context.Context, o Order) (Receipt, error)
	Ship(ctx context.Context, o Order) (tracking string, err error)
	Mail(ctx context.Context, to, text string) error
	Import(ctx context.Context, file string, row int) error
}

type shopKey struct{}

// WithShop returns ctx carrying s, for the tasks run with it.
func WithShop(ctx context.Context, s Shop) context.Context {
	return context.WithValue(ctx, shopKey{}, s)
}

func shop(ctx context.Context) (Shop, error) {
	s, ok := ctx.Value(shopKey{}).(Shop)
	if !ok {
		return nil, queuemax.Permanent(errors.New("steps: no Shop in the context (use WithShop)"))
	}
	return s, nil
}

// ProcessOrder charges the order's card, ships it and mails the customer,
// each as a job step: a retry (after the mail server failed, or a crash)
// runs only the steps that did not complete, with the results the others
// stored, so the card is charged once.
//
//queuemax:task retries=5
func ProcessOrder(ctx context.Context, o Order) (string, error) {
	s, err := shop(ctx)
	if err != nil {
		return "", err
	}
	receipt, err := queuemax.Step(ctx, "charge", func(ctx context.Context) (Receipt, error) {
		return s.Charge(ctx, o)
	})
	if err != nil {
		return "", err
	}
	tracking, err := queuemax.Step(ctx, "ship", func(ctx context.Context) (string, error) {
		return s.Ship(ctx, o)
	})
	if err != nil {
		return "", err
	}
	err = queuemax.Do(ctx, "mail", func(ctx context.Context) error {
		return s.Mail(ctx, o.Email, fmt.Sprintf("receipt %s, parcel %s", receipt.Number, tracking))
	})
	if err != nil {
		return "", err
	}
	return receipt.Number + " " + tracking, nil
}

// ImportRows imports rows 0 to rows-1 of file, recording its position
// every 100 rows: a later attempt resumes from the last position recorded
// instead of row 0.
//
//queuemax:task retries=5
func ImportRows(ctx context.Context, file string, rows int) error {
	s, err := shop(ctx)
	if err != nil {
		return err
	}
	return queuemax.Do(ctx, "import", func(ctx context.Context) error {
		next, _, err := queuemax.Cursor[int](ctx) // 0 on the first attempt
		if err != nil {
			return err
		}
		for row := next; row < rows; row++ {
			if err := s.Import(ctx, file, row); err != nil {
				return err
			}
			if (row+1)%100 == 0 {
				if err := queuemax.SetCursor(ctx, row+1); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
