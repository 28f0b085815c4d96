package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/queuemax/queuemax/queuemaxtype"
)

// Job progress: the recorded state of a job's steps (queuemax.Step, Do,
// SetCursor), which are parts of one handler, not workflow steps (jobs).
// It lives on the job's own row as one JSON object keyed by step name, so
// it is kept while the job is (retries, snoozes, releases, orphan
// recovery, a retry from the dead-letter queue), pruned with it, and costs
// a job that records none nothing. Each write sets one step's entry in one
// statement fenced by the job's lease.

// JobStep is one step's recorded progress (queuemaxtype.JobStep).
type JobStep = queuemaxtype.JobStep

// JobProgress is the part of Store that records job steps.
type JobProgress interface {
	// SetProgress writes p.Step as the entry of its name in the progress
	// of the job p.Lease names, replacing an entry of that name, in one
	// statement: only while the lease holds (else ErrLeaseLost, changing
	// nothing), so a worker that lost its job cannot overwrite what the
	// job's current holder wrote.
	SetProgress(ctx context.Context, p ProgressParams) error
	// SetProgressTx is SetProgress inside tx, the application's own
	// transaction (see TxInserter): the entry is written if and only if
	// tx commits, and the job's row stays locked until then. A store that
	// cannot join an application's transaction returns
	// ErrProgressTxUnsupported.
	SetProgressTx(ctx context.Context, tx any, p ProgressParams) error
	// Progress returns the recorded progress of job id, ordered as
	// DecodeProgress orders it; ErrJobNotFound if no job has that ID.
	Progress(ctx context.Context, id JobID) ([]JobStep, error)
	// ResetProgress replaces the progress of a job that no worker holds
	// (pending, scheduled or finished) with steps (nil clears it):
	// ErrJobNotFound if no job has that ID, an error wrapping
	// ErrJobProcessing while a worker holds it.
	ResetProgress(ctx context.Context, id JobID, steps []JobStep, now time.Time) error
}

// ErrProgressTxUnsupported is returned by SetProgressTx of a store whose
// jobs an application's transaction cannot reach (SQLite).
var ErrProgressTxUnsupported = errors.New("queuemax: recording a job step in an application's transaction needs the PostgreSQL store")

// ErrJobProcessing is wrapped by ResetProgress for a job a worker holds.
var ErrJobProcessing = errors.New("queuemax: job is processing")

// ProgressParams writes one step's progress.
type ProgressParams struct {
	Lease
	// Step is the entry written (Name must pass CheckStepName).
	Step JobStep
	// Seq orders the job's steps for display: the step's position,
	// kept from its first write.
	Seq int
	Now time.Time
}

// progressEntry is how one step's progress is stored, under its name.
type progressEntry struct {
	Seq    int             `json:"n"`
	Done   bool            `json:"done,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Cursor json.RawMessage `json:"cursor,omitempty"`
	At     string          `json:"at,omitempty"`
}

// EncodeProgressEntry returns the stored form of one step's entry.
func EncodeProgressEntry(s JobStep, seq int, now time.Time) ([]byte, error) {
	e := progressEntry{Seq: seq, Done: s.Done, Cursor: s.Cursor, At: FormatTime(now)}
	if s.Done {
		e.Result = s.Result
		if len(e.Result) == 0 {
			e.Result = json.RawMessage("null")
		}
	}
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("queuemax: job step %q: encode progress: %w", s.Name, err)
	}
	return b, nil
}

// EncodeProgress returns the stored form of a whole progress (nil for
// none), the steps numbered in order.
func EncodeProgress(steps []JobStep, now time.Time) ([]byte, error) {
	if len(steps) == 0 {
		return nil, nil
	}
	m := make(map[string]json.RawMessage, len(steps))
	for i, s := range steps {
		if err := CheckStepName(s.Name); err != nil {
			return nil, err
		}
		if _, dup := m[s.Name]; dup {
			return nil, fmt.Errorf("%w: %q given twice", queuemaxtype.ErrDuplicateStep, s.Name)
		}
		at := s.UpdatedAt
		if at.IsZero() {
			at = now
		}
		e, err := EncodeProgressEntry(s, i+1, at)
		if err != nil {
			return nil, err
		}
		m[s.Name] = e
	}
	return json.Marshal(m)
}

// DecodeProgress reads a stored progress: its steps in the order they
// first wrote it (then by name). Nil for none; entries that cannot be read
// are left out.
func DecodeProgress(raw []byte) []JobStep {
	if len(raw) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || len(m) == 0 {
		return nil
	}
	type seqStep struct {
		seq int
		s   JobStep
	}
	out := make([]seqStep, 0, len(m))
	for name, v := range m {
		var e progressEntry
		if json.Unmarshal(v, &e) != nil {
			continue
		}
		out = append(out, seqStep{e.Seq, JobStep{Name: name, Done: e.Done, Result: e.Result, Cursor: e.Cursor,
			UpdatedAt: ParseTime(e.At)}})
	}
	slices.SortFunc(out, func(a, b seqStep) int {
		return cmp.Or(cmp.Compare(a.seq, b.seq), strings.Compare(a.s.Name, b.s.Name))
	})
	steps := make([]JobStep, len(out))
	for i, s := range out {
		steps[i] = s.s
	}
	return steps
}

// CheckStepName returns an error wrapping ErrInvalidStepName unless name
// can name a job step: 1 to MaxStepName bytes of valid UTF-8 without a
// double quote, a backslash or a control character.
func CheckStepName(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w %q: %s", queuemaxtype.ErrInvalidStepName, name, why)
	}
	switch {
	case name == "":
		return bad("empty")
	case len(name) > queuemaxtype.MaxStepName:
		return bad(fmt.Sprintf("longer than %d bytes", queuemaxtype.MaxStepName))
	case !utf8.ValidString(name):
		return bad("not valid UTF-8")
	case strings.ContainsAny(name, `"\`):
		return bad("holds a double quote or a backslash")
	case strings.ContainsFunc(name, unicode.IsControl):
		return bad("holds a control character")
	}
	return nil
}
