package queuemaxtype

import (
	"encoding/json"
	"errors"
	"time"
)

// Job steps (queuemax.Step, queuemax.Do) are the resumable parts of one
// job's handler: not to be confused with workflow steps, which are jobs.

// Errors of job steps.
var (
	// ErrStepOutsideJob is returned by Step, Do, Cursor and SetCursor
	// called with a context that no job handler runs with, and by
	// Cursor and SetCursor outside a step's function.
	ErrStepOutsideJob = errors.New("queuemax: job step used outside a job handler")
	// ErrDuplicateStep is returned by a Step or Do whose name an earlier
	// Step or Do of the same run of the handler used; the error names
	// both places.
	ErrDuplicateStep = errors.New("queuemax: duplicate job step name")
	// ErrInvalidStepName is returned for a step name that is empty,
	// longer than MaxStepName bytes, or holds a double quote, a
	// backslash or a control character.
	ErrInvalidStepName = errors.New("queuemax: invalid job step name")
)

// MaxStepName is the longest job step name, in bytes.
const MaxStepName = 200

// JobStep is the recorded progress of one job step: done with its result,
// or the cursor it recorded last while not done yet.
type JobStep struct {
	// Name is the step's name, unique within its job.
	Name string
	// Done is set once the step's function returned without an error:
	// later attempts return Result without calling it again.
	Done bool
	// Result is the step's result as JSON ("null" for Do and for a nil
	// result) when Done.
	Result json.RawMessage
	// Cursor is the position the step recorded last (SetCursor), as
	// JSON; nil if it recorded none.
	Cursor json.RawMessage
	// UpdatedAt is when the step's progress was written last.
	UpdatedAt time.Time
}
