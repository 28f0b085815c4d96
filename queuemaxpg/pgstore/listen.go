package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/queuemax/queuemax/runtime/store"
)

// listener holds a dedicated connection that LISTENs on the store's
// channel. Each notification (one per inserting statement, from any
// process) bumps a local version and wakes waiters. When the connection
// drops it reconnects with backoff and bumps the version once connected,
// since notifications sent meanwhile are lost; between notifications it
// polls the jobs sequence every poll interval, so a lost notification
// delays a wake-up by at most that long.
type listener struct {
	s       *Store
	cfg     *pgx.ConnConfig
	channel string
	poll    time.Duration

	version  atomic.Int64
	notified atomic.Int64 // notifications received
	polled   atomic.Int64 // changes found by polling
	connects atomic.Int64 // successful LISTENs
	pid      atomic.Uint32

	mu      sync.Mutex
	changed chan struct{}

	cancel context.CancelFunc
	done   chan struct{}
}

func startListener(s *Store, cfg *pgx.ConnConfig, channel string, poll time.Duration) *listener {
	cfg = cfg.Copy()
	// Waiting for a notification ends by deadline, never by a cancel
	// request to the server.
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: c.Conn()}
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &listener{s: s, cfg: cfg, channel: channel, poll: poll, changed: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	go l.run(ctx)
	return l
}

func (l *listener) stop() {
	l.cancel()
	<-l.done
}

// bump records a change and wakes every waiter.
func (l *listener) bump() {
	l.version.Add(1)
	l.mu.Lock()
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

func (l *listener) changes() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = 5 * time.Second
)

func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	backoff := minBackoff
	var lastSeq int64 = -1
	for ctx.Err() == nil {
		conn, err := l.listen(ctx)
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, maxBackoff)
			continue
		}
		backoff = minBackoff
		l.connects.Add(1)
		l.bump() // whatever was sent while not listening is lost
		for {
			wctx, cancel := context.WithTimeout(ctx, l.poll)
			_, err := conn.WaitForNotification(wctx)
			cancel()
			if err == nil {
				l.notified.Add(1)
				l.bump()
				continue
			}
			if ctx.Err() != nil {
				conn.Close(context.Background())
				return
			}
			if conn.IsClosed() || !errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err) {
				conn.Close(context.Background())
				l.pid.Store(0)
				break // reconnect
			}
			// Quiet for a poll interval: look for inserts whose
			// notification was lost.
			seq, err := l.lastSeq(ctx)
			if err == nil && seq != lastSeq {
				if lastSeq >= 0 {
					l.polled.Add(1)
					l.bump()
				}
				lastSeq = seq
			}
		}
	}
}

func (l *listener) listen(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, l.cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(cctx, "LISTEN "+pgx.Identifier{l.channel}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	l.pid.Store(conn.PgConn().PID())
	return conn, nil
}

func (l *listener) lastSeq(ctx context.Context) (int64, error) {
	var n int64
	err := l.s.pool.QueryRow(ctx, `SELECT last_value FROM `+pgx.Identifier{l.s.schema, "jobs_id_seq"}.Sanitize()).Scan(&n)
	return n, err
}

// DataVersion returns a counter bumped by every notification of an insert
// (from any process), every reconnect of the listener and every change its
// polling finds; see store.Store. It costs no query.
func (s *Store) DataVersion(ctx context.Context) (int64, error) {
	if s.closed.Load() {
		return 0, store.ErrClosed
	}
	return s.lis.version.Load(), nil
}

// Changes returns a channel closed at the next change DataVersion reports;
// see store.Notifier.
func (s *Store) Changes() <-chan struct{} { return s.lis.changes() }

// Features: transactional inserts, notifications, and the database's
// clock unless Options.HostClock.
func (s *Store) Features() store.Features {
	return store.Features{Tx: true, Notify: true, Clock: !s.host}
}

// ListenerStats reports what the listener has seen: notifications
// received, changes found only by polling, and successful (re)connects.
func (s *Store) ListenerStats() (notified, polled, connects int64) {
	return s.lis.notified.Load(), s.lis.polled.Load(), s.lis.connects.Load()
}

// ListenerPID returns the backend process id of the listener's connection,
// or 0 while it is not connected.
func (s *Store) ListenerPID() uint32 { return s.lis.pid.Load() }

// errHostClock is Now's error for a store that follows the callers' clocks.
var errHostClock = fmt.Errorf("pgstore: the store follows the callers' clocks (HostClock): %w", store.ErrUnsupported)

// Now returns the database's current time (store.Features.Clock). With
// HostClock it returns an error, so callers keep their own clock.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if s.closed.Load() {
		return time.Time{}, store.ErrClosed
	}
	if s.host {
		return time.Time{}, errHostClock
	}
	var t time.Time
	if err := s.pool.QueryRow(ctx, `SELECT now()`).Scan(&t); err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}
