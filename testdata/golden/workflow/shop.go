// Package workflow is a golden case: tasks chained as workflow steps, with
// struct parameters bound to the results of earlier steps.
package workflow

import (
	"context"
	"time"
)

// Order is what a customer bought.
type Order struct {
	ID     string `json:"id"`
	Amount int64  `json:"amount"`
}

// Receipt is what Charge returns.
type Receipt struct {
	OrderID string    `json:"order_id"`
	Charged int64     `json:"charged"`
	At      time.Time `json:"at"`
}

// Tracking is what Ship returns.
type Tracking struct {
	Carrier string `json:"carrier"`
	Number  string `json:"number"`
}

// Charge charges the order and returns a receipt.
//
//queuemax:task priority=2 retries=3
func Charge(ctx context.Context, order Order) (Receipt, error) {
	return Receipt{OrderID: order.ID, Charged: order.Amount}, nil
}

// Ship ships the order once it is paid for.
//
//queuemax:task
func Ship(ctx context.Context, order Order, receipt Receipt) (*Tracking, error) {
	return &Tracking{Carrier: "post", Number: receipt.OrderID}, nil
}

// Mail sends the receipt and the tracking number; it returns only an
// error.
//
//queuemax:task queue=mail
func Mail(ctx context.Context, to string, receipt Receipt, tracking *Tracking) error {
	return nil
}

// Audit has no parameters: a step others wait for.
//
//queuemax:task
func Audit(ctx context.Context) error { return nil }
