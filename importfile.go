package queuemax

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/queuemax/queuemax/internal/jsonl"
	"github.com/queuemax/queuemax/runtime/store"
)

// FileRecord is one job in an import file (see EnqueueFile). Payload is
// required; the other keys are optional. pagina_id is accepted as
// queue-max's name for key.
type FileRecord = jsonl.Record

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
	recs, lines, err := jsonl.Parse(data, MaxPayloadBytes+(1<<20))
	if le, ok := errors.AsType[*jsonl.LineError](err); ok {
		return 0, &LineError{Path: path, Line: le.Line, Err: le.Err}
	}
	if err != nil {
		return 0, fmt.Errorf("queuemax: %w", err)
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
