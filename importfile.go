package queuemax

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// FileRecord is one job in an import file. Payload is required; the other
// keys are optional. pagina_id is accepted as queue-max's name for key.
type FileRecord struct {
	Task       string          `json:"task,omitempty"`
	Payload    json.RawMessage `json:"payload"`
	Priority   *Priority       `json:"priority,omitempty"`
	MaxRetries *int            `json:"max_retries,omitempty"`
	Key        *int64          `json:"key,omitempty"`
	PaginaID   *int64          `json:"pagina_id,omitempty"`
	RunAt      *time.Time      `json:"run_at,omitempty"`
	// UniqueKey makes the job unique by it (Opts.UniqueKey).
	UniqueKey string `json:"unique_key,omitempty"`
}

// EnqueueFile enqueues every record of a JSON Lines file (one FileRecord
// object per line; blank lines are skipped) or of a file holding one JSON
// array of records. It is all or nothing: every record is parsed and
// validated before anything is stored (task names and payload shapes as
// Enqueue checks them), the first bad record is reported as a *LineError
// naming its line, and the records are stored as one batch (no job of the
// file runs unless all are stored). It returns how many jobs it stored: a
// unique job whose key a stored job holds is not stored, nor counted.
// Progress, when not nil, is called after parsing with (done, total) as the
// records are validated.
func (c *Client) EnqueueFile(ctx context.Context, path string, progress func(done, total int)) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	recs, lines, err := parseRecords(data)
	if err != nil {
		var le *LineError
		if errors.As(err, &le) {
			le.Path = path
		}
		return 0, err
	}
	params := make([]store.InsertParams, len(recs))
	for i, r := range recs {
		p := EnqueueParams{Task: r.Task, Payload: r.Payload, Opts: Opts{Priority: r.Priority, MaxRetries: r.MaxRetries, Key: r.Key,
			UniqueKey: r.UniqueKey}}
		if p.Opts.Key == nil {
			p.Opts.Key = r.PaginaID
		}
		if r.RunAt != nil {
			p.Opts.RunAt = *r.RunAt
		}
		sp, err := c.prepare(p)
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return 0, err
			}
			return 0, &LineError{Path: path, Line: lines[i], Err: err}
		}
		params[i] = sp
		if progress != nil && (i%1000 == 999 || i == len(recs)-1) {
			progress(i+1, len(recs))
		}
	}
	ids, err := c.insertPrepared(ctx, params)
	stored := 0
	for i := range ids {
		if !isDuplicate(&params[i]) {
			stored++
		}
	}
	return stored, err
}

// parseRecords decodes JSON Lines or a JSON array, strictly (unknown keys
// are errors), returning each record's starting line.
func parseRecords(data []byte) ([]FileRecord, []int, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return parseArray(data)
	}
	var recs []FileRecord
	var lines []int
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), MaxPayloadBytes+(1<<20))
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
		return nil, nil, fmt.Errorf("queuemax: read records: %w", err)
	}
	return recs, lines, nil
}

func decodeRecord(b []byte) (FileRecord, error) {
	var r FileRecord
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

func parseArray(data []byte) ([]FileRecord, []int, error) {
	lineAt := func(off int64) int { return 1 + bytes.Count(data[:off], []byte("\n")) }
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, nil, &LineError{Line: 1, Err: err}
	}
	var recs []FileRecord
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
