// Package import_shadowing is a golden case: the package declares names
// that the generated file would import, so the generated file imports
// those packages under other names.
package import_shadowing

import (
	"context"
	"errors"
	stdtime "time"
)

// time is a package-level name that the generated file's "time" import
// would clash with.
var time = stdtime.Now

// errBusy is retried in the worker.
var errBusy = errors.New("busy")

// Tick runs on a schedule with a timeout.
//
//queuemax:periodic every=1m timeout=10s
func Tick(ctx context.Context) error {
	_ = time()
	return nil
}

// Wait takes a time and retries errBusy.
//
//queuemax:task retry_on=errBusy
func Wait(ctx context.Context, until stdtime.Time) error { return errBusy }
