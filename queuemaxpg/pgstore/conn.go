package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrCommitUnknown wraps the error of an enqueue whose statement reached
// the server but whose answer never came back (the connection dropped:
// a server restart in immediate mode or a crash, a network failure): the
// jobs may or may not have been stored, and may even have run already.
// An enqueue the server provably did not run (it was not sent, the
// connection could not be opened, or the server ended the session with
// "terminating connection due to administrator command" — a fast
// shutdown or pg_terminate_backend — which rolls the statement back) is
// retried by the store itself and never returns this error.
var ErrCommitUnknown = errors.New("queuemax: enqueue outcome unknown: the connection to PostgreSQL was lost after the insert was sent, so the job may have been stored")

// Retries of an enqueue that failed before the server ran it: a backoff
// from insertRetryMin doubling to insertRetryMax, for at most
// insertRetryFor in all (a server restart takes well under that).
const (
	insertRetryMin = 20 * time.Millisecond
	insertRetryMax = time.Second
	insertRetryFor = 15 * time.Second
)

// connLost reports whether err means the session to the server is gone
// (so every pooled connection is suspect): a network error, an EOF, a
// connection exception (SQLSTATE class 08), an operator intervention
// that ends sessions (57P01 admin shutdown, 57P02 crash shutdown, 57P03
// cannot connect now), or a server that cannot be written to (see
// readOnlyServer): after a failover the writable primary is another
// host, which only new sessions reach. A connection that could not be
// taken from the pool because the caller's context ended (notSent) is
// not a loss: nothing is known about the server.
func connLost(err error) bool {
	if err == nil {
		return false
	}
	var ns *notSent
	if errors.As(err, &ns) && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P") || readOnlyServer(pgErr)
	}
	var netErr net.Error
	var connectErr *pgconn.ConnectError
	return errors.As(err, &connectErr) || errors.As(err, &netErr) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || pgconn.SafeToRetry(err)
}

// notRun reports whether the server certainly did not commit the
// statement that failed with err: it was never sent, or a fast shutdown
// (or pg_terminate_backend) ended the session, which aborts a running
// statement and never interrupts a commit.
func notRun(err error) bool {
	var ns *notSent
	if pgconn.SafeToRetry(err) || errors.As(err, &ns) {
		return true
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01":
			// An immediate shutdown reports 57P01 too, but may stop the
			// backend after its commit record is written.
			return pgErr.Message == "terminating connection due to administrator command"
		case "57P03": // the server is starting or stopping: nothing ran
			return true
		}
		// A read-only server refuses the statement before it writes.
		return readOnlyServer(pgErr)
	}
	return false
}

// readOnlyServer reports whether the server refused a statement because
// it cannot be written to: a standby (hot standby: "cannot execute … during
// recovery", "recovery is in progress", a statement cancelled by a
// conflict with recovery) or a demoted or fenced primary (25006
// read_only_sql_transaction, "cannot execute … in a read-only
// transaction"). Such an error says nothing about the job: the store
// resets its pools, whose new sessions reach the writable primary (with
// target_session_attrs=read-write in the DSN; see docs/postgres.md), and
// the statement is retried there, as after a lost connection. The
// store's own read-only sessions (Options.ReadOnly) never send a write,
// so they never see this error from one.
func readOnlyServer(e *pgconn.PgError) bool {
	switch e.Code {
	case "25006": // read_only_sql_transaction, on a standby or a read-only primary
		return true
	case "55000": // object_not_in_prerequisite_state: only the standby's one
		return strings.Contains(e.Message, "recovery is in progress")
	case "40001": // serialization_failure: only a hot standby's conflict
		return strings.Contains(e.Message, "conflict with recovery")
	}
	return false
}

// notSent wraps the error of an insert whose rows never left the client:
// the pool gave no connection (its context ended while it waited, or no
// server could be reached), or the statement before the COPY failed. No
// job was stored.
type notSent struct{ err error }

func (e *notSent) Error() string { return e.err.Error() }
func (e *notSent) Unwrap() error { return e.err }

// resetGap bounds how often a connection loss resets the pools.
const resetGap = 100 * time.Millisecond

// lost records err if it is a connection loss: the pools drop every
// connection they hold (in use ones when released), so that after a
// server restart the next statements open fresh sessions instead of each
// failing once on a dead one.
func (s *Store) lost(err error) {
	if !connLost(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return // a caller gave up (a drain, a timeout): the sessions are fine
	}
	now := time.Now().UnixNano()
	last := s.lastReset.Load()
	if now-last < int64(resetGap) || !s.lastReset.CompareAndSwap(last, now) {
		return
	}
	s.resets.Add(1)
	s.pool.Reset()
	s.claims.Reset()
}

// ConnResets returns how often a lost connection made the store reset its
// pools.
func (s *Store) ConnResets() int64 { return s.resets.Load() }

// retryInsert runs insert until it succeeds, fails for another reason than
// a lost connection, or the retries run out (insertRetryFor, or ctx). An
// error after which the jobs may exist is wrapped in ErrCommitUnknown.
func (s *Store) retryInsert(ctx context.Context, insert func() error) error {
	wait := insertRetryMin
	deadline := time.Now().Add(insertRetryFor)
	for {
		err := insert()
		var ns *notSent
		var pgErr *pgconn.PgError
		cancelled := errors.As(err, &pgErr) && pgErr.Code == "57014" // query_canceled: rolled back
		if err != nil && ctx.Err() != nil && (errors.As(err, &ns) || pgconn.SafeToRetry(err) || cancelled) {
			// Never sent (or cancelled before it committed), and the
			// caller has given up: its context's error, not an
			// unknown outcome.
			return fmt.Errorf("%w (the insert was not stored: %w)", context.Cause(ctx), err)
		}
		if err == nil || !connLost(err) {
			return err
		}
		s.lost(err)
		if !notRun(err) {
			return fmt.Errorf("%w (check before enqueueing again; see docs/postgres.md): %w", ErrCommitUnknown, err)
		}
		if time.Now().Add(wait).After(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up retrying: %w)", err, context.Cause(ctx))
		case <-t.C:
		}
		wait = min(2*wait, insertRetryMax)
	}
}
