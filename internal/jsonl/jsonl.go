// Package jsonl parses the import files of queuemax.Client.EnqueueFile:
// JSON Lines or a JSON array of job records, each located by its line.
package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
)

// Record is one job in an import file. Payload is required; the other
// keys are optional. pagina_id is accepted as queue-max's name for key.
type Record struct {
	Task       string                 `json:"task,omitempty"`
	Payload    json.RawMessage        `json:"payload"`
	Priority   *queuemaxtype.Priority `json:"priority,omitempty"`
	MaxRetries *int                   `json:"max_retries,omitempty"`
	Key        *int64                 `json:"key,omitempty"`
	PaginaID   *int64                 `json:"pagina_id,omitempty"`
	RunAt      *time.Time             `json:"run_at,omitempty"`
	// UniqueKey makes the job unique by it (Opts.UniqueKey).
	UniqueKey string `json:"unique_key,omitempty"`
}

// LineError is a bad record and the 1-based line where it starts.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns the underlying error.
func (e *LineError) Unwrap() error { return e.Err }

// Parse decodes JSON Lines (one Record per line, blank lines skipped) or a
// JSON array of records, strictly (unknown keys are errors), returning each
// record's starting line. A bad record is a *LineError; maxLine bounds a line.
func Parse(data []byte, maxLine int) ([]Record, []int, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return parseArray(data)
	}
	var recs []Record
	var lines []int
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		r, err := decodeRecord(line)
		if err != nil {
			return nil, nil, &LineError{Line: n, Err: err}
		}
		recs = append(recs, r)
		lines = append(lines, n)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("read records: %w", err)
	}
	return recs, lines, nil
}

func decodeRecord(b []byte) (Record, error) {
	var r Record
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("invalid record: %w", err)
	}
	if dec.More() {
		return r, errors.New("invalid record: extra data after the object")
	}
	if r.Payload == nil {
		return r, errors.New(`invalid record: missing "payload"`)
	}
	if r.Key != nil && r.PaginaID != nil {
		return r, errors.New(`invalid record: both "key" and "pagina_id" set`)
	}
	return r, nil
}

func parseArray(data []byte) ([]Record, []int, error) {
	lineAt := func(off int64) int { return 1 + bytes.Count(data[:off], []byte("\n")) }
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, nil, &LineError{Line: 1, Err: err}
	}
	var recs []Record
	var lines []int
	for dec.More() {
		var raw json.RawMessage
		start := dec.InputOffset()
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, &LineError{Line: lineAt(dec.InputOffset()), Err: fmt.Errorf("invalid JSON: %w", err)}
		}
		// InputOffset before Decode may sit before the separating comma.
		line := lineAt(start + int64(len(data[start:dec.InputOffset()])-len(bytes.TrimLeft(data[start:dec.InputOffset()], " \t\r\n,"))))
		r, err := decodeRecord(raw)
		if err != nil {
			return nil, nil, &LineError{Line: line, Err: err}
		}
		recs = append(recs, r)
		lines = append(lines, line)
	}
	if _, err := dec.Token(); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, &LineError{Line: lineAt(dec.InputOffset()), Err: err}
	}
	return recs, lines, nil
}
