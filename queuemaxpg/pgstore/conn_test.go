package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// Which failures reset the pools (connLost), and which enqueues the store
// retries by itself (notRun) rather than report ErrCommitUnknown.
func TestConnLostNotRun(t *testing.T) {
	t.Parallel()
	admin := &pgconn.PgError{Severity: "FATAL", Code: "57P01", Message: "terminating connection due to administrator command"}
	immediate := &pgconn.PgError{Severity: "FATAL", Code: "57P01", Message: "terminating connection due to immediate shutdown command"}
	for _, c := range []struct {
		name          string
		err           error
		lost, notRun_ bool
	}{
		{"fast shutdown", fmt.Errorf("queuemax: insert job: %w", admin), true, true},
		{"immediate shutdown", immediate, true, false},
		{"crash", &pgconn.PgError{Code: "57P02"}, true, false},
		{"starting up", &pgconn.PgError{Code: "57P03"}, true, true},
		{"connection reset mid-statement", fmt.Errorf("queuemax: insert jobs: %w", io.ErrUnexpectedEOF), true, false},
		{"connection exception", &pgconn.PgError{Code: "08006"}, true, false},
		{"syntax error", &pgconn.PgError{Code: "42601"}, false, false},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false, false},
		{"other", errors.New("boom"), false, false},
		{"nil", nil, false, false},
	} {
		if got := connLost(c.err); got != c.lost {
			t.Errorf("%s: connLost = %v, want %v", c.name, got, c.lost)
		}
		if c.err != nil {
			if got := notRun(c.err); got != c.notRun_ {
				t.Errorf("%s: notRun = %v, want %v", c.name, got, c.notRun_)
			}
		}
	}
}

// retryInsert retries an enqueue the server did not run until it passes,
// and reports one whose outcome is unknown as ErrCommitUnknown, at once.
func TestRetryInsert(t *testing.T) {
	t.Parallel()
	s := &Store{}
	s.lastReset.Store(1 << 62) // no pools here: never reset
	calls := 0
	err := s.retryInsert(context.Background(), func() error {
		if calls++; calls < 3 {
			return &pgconn.PgError{Severity: "FATAL", Code: "57P01", Message: "terminating connection due to administrator command"}
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("after two fast shutdowns: err %v after %d calls, want nil after 3", err, calls)
	}
	calls = 0
	err = s.retryInsert(context.Background(), func() error { calls++; return io.ErrUnexpectedEOF })
	if !errors.Is(err, ErrCommitUnknown) || !errors.Is(err, io.ErrUnexpectedEOF) || calls != 1 {
		t.Errorf("lost answer: err %v after %d calls, want ErrCommitUnknown (wrapping the cause) after 1", err, calls)
	}
	calls = 0
	syntax := &pgconn.PgError{Code: "42601"}
	if err := s.retryInsert(context.Background(), func() error { calls++; return syntax }); !errors.Is(err, syntax) || errors.Is(err, ErrCommitUnknown) || calls != 1 {
		t.Errorf("syntax error: err %v after %d calls, want it as is after 1", err, calls)
	}
}
