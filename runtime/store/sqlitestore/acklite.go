package sqlitestore

import (
	"strconv"

	"github.com/queuemax/queuemax/runtime/store"
)

// The usual acknowledgement batch is plain: every item names the same
// worker and none stores a result (a job without a result is deleted, or
// kept completed by retention). Such a round is sent as one JSON object
// whose keys are the row ids and whose values are scalars, which json_each
// yields without parsing each value again: completeSet's general rows
// ([id, lease, worker, result, at], read with five ->> and two unhex per
// row) cost about a sixth of a drain's CPU. The fence is the same: a row
// is written only while it is processing under the item's lease and the
// round's worker. Rows are decided, in item order, exactly as the general
// statements decide them (one item per id per round, see completeSet).
const (
	// liteAtWidth is the width of a completion time in TimeLayout for
	// years 0–9999; a round with another width takes the general rows.
	liteAtWidth = len(store.TimeLayout)
)

var (
	// ?1 is {"id": lease, …}, ?2 the worker ('' for none).
	sqlCompleteDeleteLite = `DELETE FROM fila WHERE id IN (SELECT f.id FROM json_each(?1) e JOIN fila f ON f.id = CAST(e.key AS INTEGER)
			WHERE f.lease = e.value AND f.status = 'processing' AND (?2 = '' OR f.worker_id = ?2))
		RETURNING id`
	// ?1 is {"id": "<completed_at><lease>", …}, ?2 the worker.
	sqlCompleteKeepLite = `UPDATE fila SET status = 'completed', result = NULL, completed_at = substr(u.v, 1, ` + strconv.Itoa(len(store.TimeLayout)) + `),
			worker_id = NULL, heartbeat = NULL, lease = NULL, last_error = NULL, error_type = NULL, error_stack = NULL
		FROM (SELECT CAST(key AS INTEGER) AS id, value AS v FROM json_each(?1)) AS u
		WHERE fila.id = u.id AND fila.lease = CAST(substr(u.v, ` + strconv.Itoa(len(store.TimeLayout)+1) + `) AS INTEGER)
			AND fila.status = 'processing' AND (?2 = '' OR fila.worker_id = ?2)
		RETURNING fila.id`
)

// liteRows builds a plain round's two parameters (deleted and kept rows)
// while the round stays plain.
type liteRows struct {
	ok        bool
	worker    string
	del, keep []byte
	at        []byte
}

func newLiteRows() liteRows { return liteRows{ok: true} }

// add appends one item; an item that is not plain (a result to store,
// another worker, a completion time of another width) ends the lite form.
func (r *liteRows) add(a store.CompleteParams, first bool) {
	if !r.ok {
		return
	}
	if first {
		r.worker = a.WorkerID
	}
	if a.WorkerID != r.worker || a.Result != nil {
		r.ok = false
		return
	}
	if !a.Keep {
		r.del = liteKey(r.del, a.ID.Seq())
		r.del = strconv.AppendInt(r.del, a.Token, 10)
		return
	}
	r.at = store.AppendTime(r.at[:0], a.Now)
	if len(r.at) != liteAtWidth {
		r.ok = false
		return
	}
	r.keep = liteKey(r.keep, a.ID.Seq())
	r.keep = append(r.keep, '"')
	r.keep = append(r.keep, r.at...)
	r.keep = strconv.AppendInt(r.keep, a.Token, 10)
	r.keep = append(r.keep, '"')
}

// liteKey appends `{"id":` or `,"id":`.
func liteKey(b []byte, id int64) []byte {
	if len(b) == 0 {
		b = append(b, '{')
	} else {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = strconv.AppendInt(b, id, 10)
	return append(b, '"', ':')
}

func liteParam(b []byte) string { return string(append(b, '}')) }
