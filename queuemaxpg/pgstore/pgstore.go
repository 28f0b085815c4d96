// Package pgstore is the PostgreSQL implementation of store.Store, for
// queues shared by processes on many hosts. It uses pgx v5 (pgxpool).
//
// One PostgreSQL schema holds a queue's tables (see schema.go). The store
// has one logical shard unless Options.Shards asks for more: JobIDs are
// NewJobID(shard, id) with id the jobs table's bigserial. Shards here are
// only a column, never separate files; partition keys are stored with each
// job but do not route it.
//
// Times: by default (HostClock false) leases, heartbeats, orphan recovery,
// retry and run-at times and worker expiry are decided with the database's
// clock: every absolute time a caller passes is turned into an offset from
// the caller's Now and applied to the database's now(), so hosts whose
// clocks disagree still agree on what is stale or due. Periodic slots are
// schedule instants, stored as given; the scheduler decides when they are
// due with the database's clock too (Store.Now, a store.Clock), and each
// fires once whatever the hosts' clocks, by the unique (task, slot) key.
//
// Not API: import github.com/queuemax/queuemax/queuemaxpg instead.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queuemax/queuemax/runtime/store"
)

// DefaultSchema is the schema used when Options.Schema is empty.
const DefaultSchema = "queuemax"

// ErrSchemaNewer is returned by Open when the schema was migrated by a newer
// queuemax than this binary: upgrade the binary rather than run old code
// against tables it does not know.
var ErrSchemaNewer = errors.New("queuemax: database schema is newer than this binary")

// Options configures Open.
type Options struct {
	// DSN is a postgres:// or postgresql:// URL (or a key=value string).
	DSN string
	// Schema is the schema holding the queue's tables; empty means
	// DefaultSchema. It is created if missing.
	Schema string
	// Shards is the number of logical shards; zero means 1. It is fixed
	// when the schema is created; reopening with another count fails
	// with store.ErrShardMismatch. More than one only serves callers that
	// address shards explicitly (the conformance suite): claims visit
	// them one statement each.
	Shards int
	// HostClock, when true, uses the callers' Now values as given instead
	// of the database's clock (see the package comment). Tests with a
	// fixed clock set it.
	HostClock bool
	// ReadOnly opens an existing queue without creating or migrating
	// anything: every write returns store.ErrReadOnly, and the sessions
	// are read-only (default_transaction_read_only) as a second fence.
	ReadOnly bool
	// MaxConns is the most connections to the server the store opens in
	// all: one for the listener (LISTEN needs a session of its own), a
	// quarter of the rest for the claim pool (at least one), the others
	// for the main pool (inserts, acknowledgements, heartbeats,
	// maintenance, listings). Zero means the DSN's pool_max_conns if it
	// sets one, else DefaultMaxConns. Less than MinConns is an error.
	// Pools open connections only as they need them and close those idle
	// for half an hour.
	MaxConns int32
	// PollInterval is how often the store checks for inserts it was not
	// notified of (a lost notification, a listener reconnecting); zero
	// means one second. Notifications wake waiters within milliseconds.
	PollInterval time.Duration
}

// DefaultMaxConns is Options.MaxConns when neither it nor the DSN sets
// one: the listener, one claim connection and two for the rest. A client
// keeps its statements few and batched (group commits of inserts and
// acknowledgements), so these serve many workers; 20 processes stay
// within 80 connections, under PostgreSQL's default max_connections of
// 100.
const DefaultMaxConns = 4

// MinConns is the smallest Options.MaxConns: the listener, a claim
// connection and one for the rest.
const MinConns = 3

// connSplit divides total connections between the claim pool and the
// main pool; the listener has the one left.
func connSplit(total int32) (claims, main int32) {
	claims = max(1, (total-1)/4)
	return claims, total - 1 - claims
}

// Store is a PostgreSQL store.Store. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	// claims is a second, small pool whose sessions plan without sorts
	// (enable_sort off), for the claim statements only: see openClaims.
	claims *pgxpool.Pool
	schema string
	shards int
	host   bool
	ro     bool
	q      queries
	closed atomic.Bool

	notifies  *notifyGate // which of the store's own inserts notify
	inserts   *batcher[insertItem, store.JobID]
	completes *batcher[store.CompleteParams, bool]
	progress  *batcher[store.ProgressParams, bool] // progress.go
	failures  *batcher[store.FailParams, bool]

	lis *listener

	lastReset atomic.Int64 // unix ns of the last pool reset (conn.go)
	resets    atomic.Int64
}

// Open connects to PostgreSQL, creates or migrates the schema (under an
// advisory lock, so many hosts may start at once) and starts the listener
// that turns notifications into wake-ups.
func Open(ctx context.Context, o Options) (*Store, error) {
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if len(o.Schema) > 57 {
		return nil, fmt.Errorf("queuemax: schema name %q is longer than 57 bytes", o.Schema)
	}
	if o.Shards == 0 {
		o.Shards = 1
	}
	if o.Shards < 1 || o.Shards > 1024 {
		return nil, fmt.Errorf("queuemax: %d shards is out of range (want 1–1024)", o.Shards)
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	cfg, err := pgxpool.ParseConfig(o.DSN)
	if err != nil {
		return nil, fmt.Errorf("queuemax: DSN: %w", err)
	}
	total := o.MaxConns
	if total == 0 {
		total = DefaultMaxConns
		if strings.Contains(o.DSN, "pool_max_conns") {
			total = cfg.MaxConns
		}
	}
	if total < MinConns {
		return nil, fmt.Errorf("queuemax: %d connections is too few (MaxConns or the DSN's pool_max_conns): the store needs at least %d, one each for the listener, claims and the rest", total, MinConns)
	}
	claimConns, mainConns := connSplit(total)
	cfg.MaxConns = mainConns
	cfg.MinConns = min(cfg.MinConns, mainConns)
	cfg.MinIdleConns = min(cfg.MinIdleConns, mainConns)
	var sets []string
	if o.ReadOnly {
		sets = append(sets, `SET default_transaction_read_only = on`)
	}
	cfg.AfterConnect = sessionSets(sets)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("queuemax: connect to PostgreSQL: %w", err)
	}
	claims, err := openClaims(ctx, cfg, claimConns, sets)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("queuemax: connect to PostgreSQL: %w", err)
	}
	if err := checkSessions(ctx, pool, claims); err != nil {
		pool.Close()
		claims.Close()
		return nil, err
	}
	s := &Store{pool: pool, claims: claims, schema: o.Schema, shards: o.Shards, host: o.HostClock, ro: o.ReadOnly}
	check := s.migrate
	if o.ReadOnly {
		check = s.checkVersion
	}
	if err := check(ctx); err != nil {
		pool.Close()
		claims.Close()
		return nil, err
	}
	s.q = buildQueries(pgx.Identifier{o.Schema}.Sanitize(), o.HostClock)
	s.notifies = newNotifyGate(func() { s.notify(context.Background()) })
	s.inserts = newCallerBatcher(s.insertBatch)
	s.completes = newBatcher(s.completeBatch)
	s.progress = newBatcher(s.progressBatch)
	s.failures = newBatcher(s.failBatch)
	s.lis = startListener(s, cfg.ConnConfig, o.Schema+".jobs", o.PollInterval)
	return s, nil
}

// openClaims opens the pool the claim statements run on: conns
// connections (see connSplit), whose sessions set enable_sort
// off. A claim wants the first ready rows in (priority DESC, id) order,
// which the jobs_claim index hands out in that order, so the LIMIT stops
// after the rows it takes. The planner picks that plan only when it
// believes more rows match than the LIMIT; its estimate of the pending
// rows that pass the task and paused-queue filters is a guess (no
// statistics for the expressions, none at all on a table that filled up
// since the last ANALYZE), and when it guesses low it reads every pending
// row and sorts them instead, for every claim: 15 ms for a claim of 500
// from 25,000 pending rows where the index scan takes 0.6 ms, and growing
// with the backlog. Without sorts the ordered index scan is the only plan
// left (the planner still sorts where nothing else can, as in the union
// of pending and due rows); it never reads more rows than the sort would.
// The setting is confined to these sessions: listings, filters and
// counts on the main pool keep the planner's full choice.
//
// sets are the main pool's session settings, which these sessions share.
func openClaims(ctx context.Context, cfg *pgxpool.Config, conns int32, sets []string) (*pgxpool.Pool, error) {
	cc := cfg.Copy()
	cc.MaxConns = conns
	cc.MinConns = 0
	cc.MinIdleConns = 0
	// A sort the planner cannot avoid costs it a penalty of 1e10, far
	// above jit_above_cost: without jit off every claim would be
	// JIT-compiled (0.6 s).
	cc.AfterConnect = sessionSets(append(slices.Clip(sets), `SET enable_sort = off`, `SET jit = off`))
	return pgxpool.NewWithConfig(ctx, cc)
}

// sessionSets returns a pool's AfterConnect hook running the SET
// statements sets on each new connection. Settings go in SETs rather than
// startup parameters, which a pgbouncer in session mode refuses unless told
// to ignore them.
func sessionSets(sets []string) func(context.Context, *pgx.Conn) error {
	if len(sets) == 0 {
		return nil
	}
	return func(ctx context.Context, c *pgx.Conn) error {
		for _, set := range sets {
			if _, err := c.Exec(ctx, set); err != nil {
				return fmt.Errorf("queuemax: %s: %w", set, err)
			}
		}
		return nil
	}
}

// Pool returns the store's connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Schema returns the schema holding the store's tables.
func (s *Store) Schema() string { return s.schema }

// Shards returns the number of logical shards (1 unless Options.Shards).
func (s *Store) Shards() int { return s.shards }

// ReadOnly reports whether the store was opened with Options.ReadOnly.
func (s *Store) ReadOnly() bool { return s.ro }

// Close stops the listener and closes the pool. Later calls return
// store.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return store.ErrClosed
	}
	if s.notifies.close() {
		s.notify(context.Background())
	}
	s.lis.stop()
	s.pool.Close()
	s.claims.Close()
	return nil
}

// sql expands {s} to the quoted schema name.
func (s *Store) sql(q string) string {
	return strings.ReplaceAll(q, "{s}", pgx.Identifier{s.schema}.Sanitize())
}

// lockKey is the advisory lock key that serialises migrations of schema.
func lockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("queuemax-migrate:" + schema))
	return int64(h.Sum64())
}

// migrate brings the schema to schemaVersion. It holds a session advisory
// lock on one connection for the whole run, so concurrent Opens migrate
// one after the other and the later ones find nothing to do.
func (s *Store) migrate(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("queuemax: connect to PostgreSQL: %w", err)
	}
	defer conn.Release()
	key := lockKey(s.schema)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
		return fmt.Errorf("queuemax: migration lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, key)
	if _, err := conn.Exec(ctx, s.sql(`CREATE SCHEMA IF NOT EXISTS {s}`)); err != nil {
		return fmt.Errorf("queuemax: create schema %q: %w", s.schema, err)
	}
	if _, err := conn.Exec(ctx, s.sql(`CREATE TABLE IF NOT EXISTS {s}.schema_version (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)); err != nil {
		return fmt.Errorf("queuemax: schema %q: %w", s.schema, err)
	}
	var have int
	if err := conn.QueryRow(ctx, s.sql(`SELECT coalesce(max(version), 0) FROM {s}.schema_version`)).Scan(&have); err != nil {
		return fmt.Errorf("queuemax: schema %q: read version: %w", s.schema, err)
	}
	if have > schemaVersion {
		return fmt.Errorf("%w: schema %q is at version %d, this binary knows up to %d; upgrade queuemax",
			ErrSchemaNewer, s.schema, have, schemaVersion)
	}
	for _, m := range migrations {
		if m.version <= have {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			for _, q := range m.stmts {
				if _, err := tx.Exec(ctx, s.sql(q)); err != nil {
					return err
				}
			}
			if m.version == 1 {
				if _, err := tx.Exec(ctx, s.sql(`INSERT INTO {s}.meta (key, value) VALUES ('shards', $1)`), strconv.Itoa(s.shards)); err != nil {
					return err
				}
			}
			_, err := tx.Exec(ctx, s.sql(`INSERT INTO {s}.schema_version (version, name) VALUES ($1, $2)`), m.version, m.name)
			return err
		})
		if err != nil {
			return fmt.Errorf("queuemax: schema %q: migration %d (%s): %w", s.schema, m.version, m.name, err)
		}
	}
	var shards string
	if err := conn.QueryRow(ctx, s.sql(`SELECT value FROM {s}.meta WHERE key = 'shards'`)).Scan(&shards); err != nil {
		return fmt.Errorf("queuemax: schema %q: read shard count: %w", s.schema, err)
	}
	if n, _ := strconv.Atoi(shards); n != s.shards {
		return fmt.Errorf("%w: schema %q has %s logical shards, opened with %d", store.ErrShardMismatch, s.schema, shards, s.shards)
	}
	return nil
}

// checkVersion is migrate for a read-only store: the schema must exist at a
// version this binary knows, and is not changed.
func (s *Store) checkVersion(ctx context.Context) error {
	var have pgtype.Int4
	var shards pgtype.Text
	err := s.pool.QueryRow(ctx, `SELECT (SELECT max(version) FROM `+pgx.Identifier{s.schema, "schema_version"}.Sanitize()+`),
		(SELECT value FROM `+pgx.Identifier{s.schema, "meta"}.Sanitize()+` WHERE key = 'shards')`).Scan(&have, &shards)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" || err == nil && !have.Valid {
		return fmt.Errorf("queuemax: schema %q holds no queue (open it writable once to create it)", s.schema)
	}
	if err != nil {
		return fmt.Errorf("queuemax: schema %q: read version: %w", s.schema, err)
	}
	if int(have.Int32) > schemaVersion {
		return fmt.Errorf("%w: schema %q is at version %d, this binary knows up to %d; upgrade queuemax",
			ErrSchemaNewer, s.schema, have.Int32, schemaVersion)
	}
	if n, _ := strconv.Atoi(shards.String); n != s.shards {
		return fmt.Errorf("%w: schema %q has %s logical shards, opened with %d", store.ErrShardMismatch, s.schema, shards.String, s.shards)
	}
	return nil
}

// writable returns store.ErrClosed or store.ErrReadOnly when a write must
// not run.
func (s *Store) writable() error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if s.ro {
		return store.ErrReadOnly
	}
	return nil
}

// checkShard returns store.ErrInvalidShard unless 0 <= sh < Shards.
func (s *Store) checkShard(sh int) error {
	if sh < 0 || sh >= s.shards {
		return fmt.Errorf("%w: shard %d (the store has %d)", store.ErrInvalidShard, sh, s.shards)
	}
	return nil
}

// offset returns t-now in microseconds, the form in which absolute times
// reach SQL (applied to the database's or the caller's clock).
func offset(t, now time.Time) int64 { return t.Sub(now).Microseconds() }

// hostNow is the reference time for calls that pass an absolute time but no
// Now: the host's clock, whose offset is then applied to the database's.
func hostNow() time.Time { return time.Now() }
