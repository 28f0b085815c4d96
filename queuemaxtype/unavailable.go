package queuemaxtype

// UnavailableError marks an error that says a dependency the handler calls
// is failing (down, overloaded, unreachable): it counts against the task's
// circuit breaker. It is retried like any other error. Create one with
// Unavailable.
type UnavailableError struct{ Err error }

// Unavailable wraps err as an UnavailableError. err may be nil.
func Unavailable(err error) error { return &UnavailableError{Err: err} }

func (e *UnavailableError) Error() string {
	if e.Err == nil {
		return "dependency unavailable"
	}
	return "dependency unavailable: " + e.Err.Error()
}

// Unwrap returns the wrapped error.
func (e *UnavailableError) Unwrap() error { return e.Err }

// DependencyFailure reports true: the error counts against the task's
// circuit breaker.
func (e *UnavailableError) DependencyFailure() bool { return true }
