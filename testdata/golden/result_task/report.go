// Package result_task is a golden case: tasks that return a result.
package result_task

import "context"

// Report is the result of GenerateReport.
type Report struct {
	UserID int64   `json:"user_id"`
	Month  string  `json:"month"`
	Total  float64 `json:"total"`
}

// GenerateReport builds one user's monthly report.
//
//queuemax:task timeout=2m
func GenerateReport(ctx context.Context, userID int64, month string) (Report, error) {
	return Report{UserID: userID, Month: month}, nil
}

// Lookup returns a pointer result and a slice parameter.
//
//queuemax:task
func Lookup(ctx context.Context, keys []string) (*Report, error) {
	return nil, nil
}

// Count returns a predeclared type.
//
//queuemax:task priority=1
func Count(ctx context.Context) (int, error) {
	return 0, nil
}
