package sqlitestore

// schemaVersion is the version written to shard_metadata.version once every
// migration has run. Versions 1 and 2 are queue-max's; 3 and later are ours.
const schemaVersion = 20

// baseSchema creates queue-max's tables exactly as queue-max 0.2.0 does
// (same names, columns, types, defaults and CHECK), so that files written by
// either side stay readable by the other. It is idempotent.
const baseSchema = `
CREATE TABLE IF NOT EXISTS fila (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	pagina_id INTEGER,
	payload TEXT NOT NULL,
	status TEXT NOT NULL DEFAULT 'pending'
		CHECK (status IN ('pending','processing','failed','completed','cancelled','scheduled')),
	priority INTEGER NOT NULL DEFAULT 0,
	tentativas INTEGER NOT NULL DEFAULT 0,
	max_tentativas INTEGER NOT NULL DEFAULT 3,
	retry_delay INTEGER NOT NULL DEFAULT 60,
	last_error TEXT,
	error_type TEXT,
	error_stack TEXT,
	worker_id TEXT,
	heartbeat TEXT,
	created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
	started_at TEXT,
	completed_at TEXT,
	next_retry_at TEXT
);
CREATE TABLE IF NOT EXISTS shard_metadata (
	shard_id INTEGER PRIMARY KEY,
	version INTEGER DEFAULT 1,
	created_at TEXT DEFAULT CURRENT_TIMESTAMP,
	last_vacuum TEXT,
	total_jobs_processed INTEGER DEFAULT 0,
	total_jobs_failed INTEGER DEFAULT 0
);
CREATE TABLE IF NOT EXISTS dead_letter_queue (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	original_job_id INTEGER,
	payload TEXT NOT NULL,
	error TEXT NOT NULL,
	error_type TEXT NOT NULL,
	failed_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
	shard_id INTEGER
);
CREATE INDEX IF NOT EXISTS idx_heartbeat ON fila(heartbeat) WHERE status = 'processing';
CREATE INDEX IF NOT EXISTS idx_dlq_failed_at ON dead_letter_queue(failed_at);
`

// migration moves one shard file from version-1 to version. Each runs in
// its own transaction together with the version bump, so a file is never
// left half-migrated.
type migration struct {
	version int
	name    string
	stmts   []string
	// addColumns are (table, column, definition) triples added only when
	// missing, since SQLite has no ADD COLUMN IF NOT EXISTS.
	addColumns [][3]string
}

var migrations = []migration{
	{
		version: 3,
		name:    "queuemax columns, claim index, one timestamp format",
		addColumns: [][3]string{
			{"fila", "task", "TEXT"},
			{"fila", "lease", "INTEGER"},
			{"fila", "result", "TEXT"},
			{"fila", "shard_id", "INTEGER"},
			{"dead_letter_queue", "task", "TEXT"},
			{"dead_letter_queue", "attempts", "INTEGER"},
			{"dead_letter_queue", "error_stack", "TEXT"},
		},
		stmts: []string{
			// queue-max's pop index cannot serve ORDER BY priority DESC, id
			// (SQLite sorts every ready row per pop); these replace it.
			`DROP INDEX IF EXISTS idx_pop_job`,
			`DROP INDEX IF EXISTS idx_status_priority`,
			`DROP INDEX IF EXISTS idx_next_retry`,
			`DROP INDEX IF EXISTS idx_created_at`,
			`DROP INDEX IF EXISTS idx_status_created`,
			`CREATE INDEX IF NOT EXISTS idx_qm_claim ON fila(status, priority DESC, id)`,
			`CREATE INDEX IF NOT EXISTS idx_qm_due ON fila(next_retry_at) WHERE status = 'scheduled'`,
			`CREATE INDEX IF NOT EXISTS idx_qm_finished ON fila(completed_at) WHERE status IN ('failed', 'completed')`,
			`CREATE INDEX IF NOT EXISTS idx_qm_dlq_job ON dead_letter_queue(original_job_id)`,
			// queue-max keeps retry-delayed jobs pending with a future
			// next_retry_at; we keep them out of the ready set.
			`UPDATE fila SET status = 'scheduled' WHERE status = 'pending' AND next_retry_at IS NOT NULL AND next_retry_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`,
			// One timestamp format everywhere (queue-max mixes two).
			`UPDATE fila SET created_at = strftime('%Y-%m-%dT%H:%M:%fZ', created_at) WHERE created_at NOT LIKE '%Z'`,
			`UPDATE dead_letter_queue SET failed_at = strftime('%Y-%m-%dT%H:%M:%fZ', failed_at) WHERE failed_at NOT LIKE '%Z'`,
		},
	},
	{
		version: 4,
		name:    "periodic task schedules and the slots they fired",
		stmts: []string{
			// Only shard 0's file is used: it coordinates every scheduler
			// that shares the data directory.
			`CREATE TABLE IF NOT EXISTS qm_periodic (
				task TEXT PRIMARY KEY,
				schedule TEXT NOT NULL,
				misfire TEXT NOT NULL DEFAULT 'skip',
				next_run TEXT NOT NULL,
				last_run TEXT,
				last_job_id INTEGER,
				updated_at TEXT NOT NULL
			)`,
			// One row per (task, scheduled time): the unique key that makes
			// each slot fire once, whatever the number of schedulers.
			`CREATE TABLE IF NOT EXISTS qm_periodic_runs (
				task TEXT NOT NULL,
				slot TEXT NOT NULL,
				job_id INTEGER NOT NULL,
				fired_at TEXT NOT NULL,
				PRIMARY KEY (task, slot)
			)`,
		},
	},
	{
		version: 5,
		name:    "the worker registry, job metadata",
		// metadata is a job's JSON object of trace context and user
		// metadata; the dead letter keeps it so a re-created job has it.
		addColumns: [][3]string{
			{"fila", "metadata", "TEXT"},
			{"dead_letter_queue", "metadata", "TEXT"},
		},
		stmts: []string{
			// Only shard 0's file is used: one row per live process that
			// runs jobs, refreshed with its heartbeats.
			`CREATE TABLE IF NOT EXISTS qm_workers (
				id TEXT PRIMARY KEY,
				info TEXT NOT NULL,
				started_at TEXT NOT NULL,
				updated_at TEXT NOT NULL,
				expires_at TEXT NOT NULL
			)`,
		},
	},
	{
		version: 6,
		name:    "all-or-nothing batches across shards; pending rows with a retry time",
		addColumns: [][3]string{
			// The batch a staged row belongs to, and the next_retry_at it
			// gets when the batch is published.
			{"fila", "batch_id", "TEXT"},
			{"fila", "batch_next", "TEXT"},
		},
		stmts: []string{
			`CREATE INDEX IF NOT EXISTS idx_qm_batch ON fila(batch_id) WHERE batch_id IS NOT NULL`,
			// Pending rows with a retry time (queue-max writes retries
			// so): Stats counts the future ones as scheduled.
			`CREATE INDEX IF NOT EXISTS idx_qm_pending_later ON fila(next_retry_at) WHERE status = 'pending' AND next_retry_at IS NOT NULL`,
			// Only shard 0's file is used: the commit decision of each
			// multi-shard batch in flight.
			`CREATE TABLE IF NOT EXISTS qm_batches (
				id TEXT PRIMARY KEY,
				state TEXT NOT NULL CHECK (state IN ('committed', 'aborted')),
				decided_at TEXT NOT NULL
			)`,
		},
	},
	{
		version: 7,
		name:    "job cancellation requests, snooze counts",
		// cancel_requested is set by Cancel on a processing job; the
		// worker's heartbeat reads it back.
		addColumns: [][3]string{
			{"fila", "cancel_requested", "INTEGER NOT NULL DEFAULT 0"},
			{"fila", "snoozes", "INTEGER NOT NULL DEFAULT 0"},
		},
	},
	{
		version: 8,
		name:    "unique jobs",
		// unique_key is a unique job's key, unique_states the statuses
		// that count for it as ",pending,scheduled,processing,": a job
		// holds its key while its status is among them. queue-max writes
		// neither (its rows are never unique) and keeps reading the file.
		addColumns: [][3]string{
			{"fila", "unique_key", "TEXT"},
			{"fila", "unique_states", "TEXT"},
		},
		stmts: []string{
			// The decision: at most one row per key whose status counts.
			// SQLite maintains it on every write, queue-max's included
			// (instr is a deterministic built-in), so it depends on the
			// status, never on whether a finished row is kept.
			`CREATE UNIQUE INDEX IF NOT EXISTS idx_qm_unique ON fila(unique_key)
				WHERE unique_key IS NOT NULL AND instr(unique_states, ',' || status || ',') > 0`,
			// Every keyed row, for the retry paths' look-ups.
			`CREATE INDEX IF NOT EXISTS idx_qm_unique_all ON fila(unique_key) WHERE unique_key IS NOT NULL`,
		},
	},
	{
		version: 9,
		name:    "per-job timeouts and tags",
		// timeout_ms overrides the task's timeout for one job; tags is the
		// job's tags as a JSON array of strings.
		addColumns: [][3]string{
			{"fila", "timeout_ms", "INTEGER"},
			{"fila", "tags", "TEXT"},
		},
		stmts: []string{
			// One row per (tag, job): the tag filter of a listing reads
			// this primary key instead of scanning fila. The triggers keep
			// it in step with fila whoever writes (queue-max included);
			// rows without tags pay only the WHEN test.
			`CREATE TABLE IF NOT EXISTS qm_job_tags (
				tag TEXT NOT NULL,
				job_id INTEGER NOT NULL,
				PRIMARY KEY (tag, job_id)
			) WITHOUT ROWID`,
			`CREATE TRIGGER IF NOT EXISTS qm_job_tags_insert AFTER INSERT ON fila
				WHEN NEW.tags IS NOT NULL
				BEGIN
					INSERT OR IGNORE INTO qm_job_tags (tag, job_id) SELECT value, NEW.id FROM json_each(NEW.tags);
				END`,
			`CREATE TRIGGER IF NOT EXISTS qm_job_tags_delete AFTER DELETE ON fila
				WHEN OLD.tags IS NOT NULL
				BEGIN
					DELETE FROM qm_job_tags WHERE job_id = OLD.id AND tag IN (SELECT value FROM json_each(OLD.tags));
				END`,
		},
	},
	{
		version: 10,
		name:    "named queues: the job's queue, paused queues",
		// queue-max's inserts leave queue out and get the default queue.
		addColumns: [][3]string{
			{"fila", "queue", "TEXT NOT NULL DEFAULT 'default'"},
		},
		stmts: []string{
			// Claims of one named queue walk this index in order.
			`CREATE INDEX IF NOT EXISTS idx_qm_claim_queue ON fila(queue, priority DESC, id) WHERE status = 'pending'`,
			// Every shard file holds the paused queues, so that each
			// shard's claim skips them in the same statement; Pause and
			// Resume write every shard.
			`CREATE TABLE IF NOT EXISTS qm_queues (
				name TEXT PRIMARY KEY,
				paused_at TEXT,
				updated_at TEXT NOT NULL
			)`,
		},
	},
	{
		version: 11,
		name:    "the hot path's indexes: each status change touches the fewest entries",
		stmts: []string{
			// The claim index holds only ready rows: a claim removes the
			// row's entry and its completion touches nothing here, where
			// (status, priority, id) took an entry out and put one back at
			// every status change, and held every kept completed row.
			`DROP INDEX IF EXISTS idx_qm_claim`,
			`CREATE INDEX IF NOT EXISTS idx_qm_ready ON fila(priority DESC, id) WHERE status = 'pending'`,
			// Finished rows by status, then finish time: pruning and the
			// counts of Stats read it (cancelled rows too, which the old
			// idx_qm_finished left to a scan).
			`DROP INDEX IF EXISTS idx_qm_finished`,
			`CREATE INDEX IF NOT EXISTS idx_qm_done ON fila(status, completed_at) WHERE status IN ('failed', 'completed', 'cancelled')`,
			// Named queues only: the default queue's jobs (most jobs) are
			// claimed through idx_qm_ready and need no entry here.
			`DROP INDEX IF EXISTS idx_qm_claim_queue`,
			`CREATE INDEX IF NOT EXISTS idx_qm_claim_queue ON fila(queue, priority DESC, id) WHERE status = 'pending' AND ` + sqlNamedQueue,
		},
	},
	{
		version: 12,
		name:    "circuit breakers shared by every process (shard 0's file only; breakers.go)",
		// dep_attempt is the attempt of the job whose failure said its
		// dependency was failing: a breaker's probe prefers such a job to
		// one that failed on its own input.
		addColumns: [][3]string{{"fila", "dep_attempt", "INTEGER"}},
		stmts:      migrationBreakers,
	},
	{
		version: 13,
		name:    "global limits: state rows and queue rules (used in shard 0)",
		stmts:   limitsMigration,
	},
	{
		// workflow_schema.go
		version: 14, name: workflowMigration.name,
		addColumns: workflowMigration.addColumns, stmts: workflowMigration.stmts,
	},
	{
		// workflow_retry.go
		version: 15, name: workflowRetryMigration.name,
		addColumns: workflowRetryMigration.addColumns, stmts: workflowRetryMigration.stmts,
	},
	{
		version: 16,
		name:    "task catalogue: the tasks workers ran, kept after they stop (shard 0's file only; catalog.go)",
		stmts:   migrationCatalog,
	},
	progressMigration, // progress.go
	{
		// retry_delay keeps queue-max's whole seconds; a finer backoff
		// base is kept here too (NULL: retry_delay's seconds are exact).
		version:    18,
		name:       "retry_delay_ms: the backoff base to the millisecond",
		addColumns: [][3]string{{"fila", "retry_delay_ms", "INTEGER"}},
	},
	{
		// Each pending row now has exactly one claim index entry: the
		// default queue's in idx_qm_ready, a named queue's in
		// idx_qm_claim_queue. Every queue's ready jobs are then a run of
		// one index of their own, so a claim that leaves a paused or
		// capped queue out never steps over its backlog (claimMixedSQL).
		version: 19,
		name:    "idx_qm_ready holds the default queue's ready jobs only",
		stmts: []string{
			`DROP INDEX IF EXISTS idx_qm_ready`,
			`CREATE INDEX IF NOT EXISTS idx_qm_ready ON fila(priority DESC, id) WHERE ` + sqlReadyDefault,
		},
	},
	workflowTriggersMigration, // workflow_triggers.go
}
