// Package retry_on is a golden case: errors retried inside the worker.
package retry_on

import (
	"context"
	"errors"
	"io"
	"net"
	neturl "net/url"
)

// ErrBusy is a local sentinel.
var ErrBusy = errors.New("busy")

// BusyError is a local error type with a pointer receiver.
type BusyError struct{ Shard int }

func (e *BusyError) Error() string { return "busy" }

// ThrottleError is a local error type with a value receiver.
type ThrottleError struct{}

func (ThrottleError) Error() string { return "throttled" }

// Fetch downloads one URL.
//
//queuemax:task retry_on=io.ErrUnexpectedEOF,*net.OpError,ErrBusy inline_retries=5
func Fetch(ctx context.Context, url string) error {
	var opErr *net.OpError
	if errors.As(io.ErrUnexpectedEOF, &opErr) {
		return opErr
	}
	return ErrBusy
}

// Store retries on local types, an aliased import and an interface type.
//
//queuemax:task retry_on=*BusyError,ThrottleError,*neturl.Error,net.Error
func Store(ctx context.Context, key string) error {
	return &neturl.Error{Op: "put", URL: key, Err: ThrottleError{}}
}
