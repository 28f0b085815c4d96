package admission

import (
	"context"
	"errors"
	"net"
	"syscall"

	"github.com/queuemax/queuemax/queuemaxtype"
)

// DependencyFailure reports whether a handler's err says that a
// dependency is failing, so that it counts against the task's circuit
// breaker (the root package's IsDependencyFailure documents the rules).
// It decides by type, never by message text.
func DependencyFailure(err error) bool {
	if err == nil {
		return false
	}
	// What ends the job or says nothing about a dependency first: a
	// Permanent error is the job's own fault, whatever it wraps.
	if _, ok := errors.AsType[*queuemaxtype.PermanentError](err); ok {
		return false
	}
	if _, ok := errors.AsType[*queuemaxtype.CancelError](err); ok {
		return false
	}
	if _, ok := errors.AsType[*queuemaxtype.SnoozeError](err); ok {
		return false
	}
	if _, ok := errors.AsType[*queuemaxtype.PanicError](err); ok {
		return false
	}
	// The user's say wins over the type rules below.
	var df interface{ DependencyFailure() bool }
	if errors.As(err, &df) {
		return df.DependencyFailure()
	}
	if _, ok := errors.AsType[*queuemaxtype.RetryAfterError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*queuemaxtype.TimeoutError](err); ok {
		return true
	}
	if code, ok := httpStatus(err); ok {
		return code >= 500 || code == 429
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	// A host name that does not resolve is the input's (a bad URL), a
	// lookup that timed out or failed temporarily is the resolver's.
	if de, ok := errors.AsType[*net.DNSError](err); ok {
		return de.IsTimeout || de.IsTemporary
	}
	var te interface{ Timeout() bool }
	if errors.As(err, &te) && te.Timeout() {
		return true
	}
	for _, errno := range []syscall.Errno{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED,
		syscall.EPIPE, syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ENETDOWN} {
		if errors.Is(err, errno) {
			return true
		}
	}
	if _, ok := errors.AsType[*net.OpError](err); ok {
		return true
	}
	return false
}

// httpStatus returns the HTTP status an error carries through a
// StatusCode() int or HTTPStatus() int method.
func httpStatus(err error) (int, bool) {
	var sc interface{ StatusCode() int }
	if errors.As(err, &sc) {
		return sc.StatusCode(), true
	}
	var hs interface{ HTTPStatus() int }
	if errors.As(err, &hs) {
		return hs.HTTPStatus(), true
	}
	return 0, false
}
