package queuemax

import (
	"fmt"

	"github.com/queuemax/queuemax/queuemaxtype"
)

// The middleware types are defined, with their full documentation, in
// package queuemaxtype, which the engine shares.
type (
	// JobMiddleware is one entry of Config.Middleware: a value that
	// implements EnqueueMiddleware, WorkMiddleware, or both; see
	// queuemaxtype.JobMiddleware. (The net/http Middleware function is
	// unrelated: it puts a Client into request contexts.)
	JobMiddleware = queuemaxtype.JobMiddleware
	// EnqueueMiddleware wraps every insert of new jobs; see
	// queuemaxtype.EnqueueMiddleware.
	EnqueueMiddleware = queuemaxtype.EnqueueMiddleware
	// WorkMiddleware wraps each execution of a job's handler; see
	// queuemaxtype.WorkMiddleware.
	WorkMiddleware = queuemaxtype.WorkMiddleware
	// EnqueueMiddlewareFunc adapts a function to an EnqueueMiddleware; see
	// queuemaxtype.EnqueueMiddlewareFunc.
	EnqueueMiddlewareFunc = queuemaxtype.EnqueueMiddlewareFunc
	// WorkMiddlewareFunc adapts a function to a WorkMiddleware; see
	// queuemaxtype.WorkMiddlewareFunc.
	WorkMiddlewareFunc = queuemaxtype.WorkMiddlewareFunc
	// InsertJob is one job on its way into the store, as EnqueueMiddleware
	// sees it; see queuemaxtype.InsertJob for its fields and SetMetadata.
	InsertJob = queuemaxtype.InsertJob
)

// checkMiddleware is Config.validate's check of Config.Middleware.
func checkMiddleware(mws []JobMiddleware) error {
	for i, m := range mws {
		_, enq := m.(EnqueueMiddleware)
		_, work := m.(WorkMiddleware)
		if !enq && !work {
			return &ConfigError{"Middleware", fmt.Sprintf("entry %d (%T) implements neither EnqueueMiddleware nor WorkMiddleware", i, m)}
		}
	}
	return nil
}
