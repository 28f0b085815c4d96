package tasks

import (
	"context"
	"fmt"
	"time"

	"github.com/queuemax/queuemax"
)

// Report is the result of GenerateReport, stored with the completed job.
type Report struct {
	UserID int64  `json:"user_id"`
	Month  string `json:"month"`
	Orders int    `json:"orders"`
	// TotalCents is the month's revenue in cents.
	TotalCents int64 `json:"total_cents"`
}

// GenerateReport computes one user's monthly report. month is YYYY-MM.
// The numbers are a deterministic stand-in for a query.
//
//queuemax:task priority=1 timeout=2m
func GenerateReport(ctx context.Context, userID int64, month string) (Report, error) {
	m, err := time.Parse("2006-01", month)
	if err != nil {
		return Report{}, queuemax.Permanent(fmt.Errorf("generate report: month %q: want YYYY-MM", month))
	}
	if err := ctx.Err(); err != nil {
		return Report{}, err
	}
	orders := int(userID%5) + int(m.Month())
	return Report{UserID: userID, Month: month, Orders: orders, TotalCents: int64(orders) * 1250}, nil
}
