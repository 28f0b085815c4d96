// Package param_names is a golden case: parameters whose names collide
// with identifiers of the generated methods, types of other packages that
// are imported under another name, and anonymous structs.
package param_names

import (
	"context"
	stdjson "encoding/json"
	"time"
)

// Schedule takes parameters named like the generated methods' own.
//
//queuemax:task
func Schedule(c context.Context, ctx string, at time.Time, d time.Duration, args []string, t int, queuemax bool, tx string) error {
	return nil
}

// Raw takes a type from an aliased import, an array and an anonymous
// struct with tags.
//
//queuemax:task
func Raw(ctx context.Context, raw stdjson.RawMessage, pair [2]int, opts struct {
	Verbose bool `json:"verbose,omitempty"`
	Level   int
}) error {
	return nil
}

// Blank has a blank ctx, which is allowed.
//
//queuemax:task
func Blank(_ context.Context, HTTPServer string, page_size int) error {
	return nil
}

// Chain has parameters named like the identifiers of the generated Step
// method (wf, stepName, stepOpts) and a builtin it calls (append).
//
//queuemax:task
func Chain(ctx context.Context, wf string, stepName int, stepOpts []string, append bool) (string, error) {
	return wf, nil
}

// Order takes parameters named like identifiers that only generated
// methods without the task's parameters use (With's o, Result's id, the
// retry_on closure's err): they keep their names.
//
//queuemax:task
func Order(ctx context.Context, o string, id int, err string) error {
	return nil
}
