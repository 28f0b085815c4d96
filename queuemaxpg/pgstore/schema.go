package pgstore

// The tables live in one schema (Options.Schema, default "queuemax"); {s}
// below stands for its quoted name. They keep the column meanings of the
// SQLite store's tables (runtime/store/sqlitestore/schema.go) under English
// names:
//
//	jobs           fila: one row per job; shard is the logical shard index
//	               (always 0 for a one-shard store), partition_key is
//	               fila.pagina_id, attempts/max_attempts are tentativas and
//	               max_tentativas, lease fences acknowledgements.
//	dead_letters   dead_letter_queue
//	counters       shard_metadata's lifetime counters, spread over a few
//	               slots per shard so that concurrent acknowledgements do
//	               not queue on one row lock; readers sum the slots.
//	periodic       qm_periodic
//	periodic_runs  qm_periodic_runs, unique (task, slot)
//	workers        qm_workers
//	queues         qm_queues: paused queues (one table for every shard)
//	meta           the settings fixed at creation (the shard count)
//	schema_version one row per migration applied
//
// Inserts into jobs notify the channel "<schema>.jobs" once per statement
// (a statement-level trigger), and so does a job set back to pending (a
// row trigger; PostgreSQL folds equal notifications of one transaction):
// this wakes idle workers of every process. A statement that sets
// queuemax.quiet on for its transaction skips the notification: the
// store's own inserts do when another one notified less than
// notifyWindow ago (see notify.go).

// schemaVersion is the newest migration this binary knows.
const schemaVersion = 19

type migration struct {
	version int
	name    string
	stmts   []string
}

var migrations = []migration{
	{
		version: 1,
		name:    "jobs, dead letters, counters, periodic tasks, workers",
		stmts: []string{
			`CREATE TABLE {s}.meta (
				key text PRIMARY KEY,
				value text NOT NULL
			)`,
			`CREATE TABLE {s}.jobs (
				id bigserial PRIMARY KEY,
				shard integer NOT NULL DEFAULT 0,
				partition_key bigint,
				task text,
				payload json NOT NULL,
				status text NOT NULL DEFAULT 'pending'
					CHECK (status IN ('pending','processing','failed','completed','cancelled','scheduled')),
				priority smallint NOT NULL DEFAULT 0,
				attempts integer NOT NULL DEFAULT 0,
				max_attempts integer NOT NULL DEFAULT 3,
				retry_delay integer NOT NULL DEFAULT 60, -- milliseconds since version 16
				last_error text,
				error_type text,
				error_stack text,
				worker_id text,
				lease bigint,
				heartbeat timestamptz,
				created_at timestamptz NOT NULL DEFAULT now(),
				started_at timestamptz,
				completed_at timestamptz,
				next_retry_at timestamptz,
				result json,
				metadata json
			)`,
			// The claim walks this index in order and stops after LIMIT rows.
			`CREATE INDEX jobs_claim ON {s}.jobs (priority DESC, id) WHERE status = 'pending'`,
			`CREATE INDEX jobs_due ON {s}.jobs (next_retry_at) WHERE status = 'scheduled'`,
			`CREATE INDEX jobs_heartbeat ON {s}.jobs (heartbeat) WHERE status = 'processing'`,
			`CREATE INDEX jobs_finished ON {s}.jobs (completed_at) WHERE status IN ('failed', 'completed', 'cancelled')`,
			`CREATE TABLE {s}.dead_letters (
				id bigserial PRIMARY KEY,
				shard integer NOT NULL DEFAULT 0,
				original_job_id bigint,
				task text,
				payload json NOT NULL,
				error text NOT NULL,
				error_type text NOT NULL,
				error_stack text,
				attempts integer,
				failed_at timestamptz NOT NULL DEFAULT now(),
				metadata json
			)`,
			`CREATE INDEX dead_letters_job ON {s}.dead_letters (original_job_id)`,
			`CREATE INDEX dead_letters_failed_at ON {s}.dead_letters (failed_at)`,
			`CREATE TABLE {s}.counters (
				shard integer NOT NULL,
				slot integer NOT NULL,
				processed bigint NOT NULL DEFAULT 0,
				failed bigint NOT NULL DEFAULT 0,
				PRIMARY KEY (shard, slot)
			)`,
			`CREATE TABLE {s}.periodic (
				task text PRIMARY KEY,
				schedule text NOT NULL,
				misfire text NOT NULL DEFAULT 'skip',
				next_run timestamptz NOT NULL,
				last_run timestamptz,
				last_job_id bigint,
				updated_at timestamptz NOT NULL
			)`,
			`CREATE TABLE {s}.periodic_runs (
				task text NOT NULL,
				slot timestamptz NOT NULL,
				job_id bigint NOT NULL,
				fired_at timestamptz NOT NULL,
				PRIMARY KEY (task, slot)
			)`,
			`CREATE TABLE {s}.workers (
				id text PRIMARY KEY,
				info jsonb NOT NULL,
				started_at timestamptz NOT NULL,
				updated_at timestamptz NOT NULL,
				expires_at timestamptz NOT NULL
			)`,
			`CREATE FUNCTION {s}.notify_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				PERFORM pg_notify(TG_TABLE_SCHEMA || '.jobs', '');
				RETURN NULL;
			END $$`,
			`CREATE TRIGGER jobs_notify AFTER INSERT ON {s}.jobs
				FOR EACH STATEMENT EXECUTE FUNCTION {s}.notify_jobs()`,
			// A job made ready again (a retry, release, recovery or
			// requeue) wakes workers too; claims and acknowledgements,
			// which never set pending, pay nothing.
			`CREATE TRIGGER jobs_ready AFTER UPDATE OF status ON {s}.jobs
				FOR EACH ROW WHEN (NEW.status = 'pending' AND OLD.status IS DISTINCT FROM 'pending')
				EXECUTE FUNCTION {s}.notify_jobs()`,
		},
	},
	{
		version: 2,
		name:    "job cancellation requests, snooze counts",
		stmts: []string{
			// Set by Cancel on a processing job; heartbeats read it back.
			`ALTER TABLE {s}.jobs ADD COLUMN IF NOT EXISTS cancel_requested boolean NOT NULL DEFAULT false`,
			// How often the job snoozed (ran again without spending an attempt).
			`ALTER TABLE {s}.jobs ADD COLUMN IF NOT EXISTS snoozes integer NOT NULL DEFAULT 0`,
		},
	},
	{
		version: 3,
		name:    "unique jobs",
		stmts: []string{
			// A unique job's key, and the statuses during which it holds it.
			`ALTER TABLE {s}.jobs ADD COLUMN IF NOT EXISTS unique_key text`,
			`ALTER TABLE {s}.jobs ADD COLUMN IF NOT EXISTS unique_states text[]`,
			// The decision: at most one row per key whose status counts,
			// so it depends on the status, never on whether a finished row
			// is kept. Inserts name it as their ON CONFLICT arbiter.
			`CREATE UNIQUE INDEX IF NOT EXISTS jobs_unique ON {s}.jobs (unique_key)
				WHERE unique_key IS NOT NULL AND status = ANY (unique_states)`,
			// Every keyed row, for the retry paths' look-ups.
			`CREATE INDEX IF NOT EXISTS jobs_unique_all ON {s}.jobs (unique_key) WHERE unique_key IS NOT NULL`,
		},
	},
	{
		version: 4,
		name:    "per-job timeouts and tags",
		stmts: []string{
			// A job's own execution timeout, overriding its task's.
			`ALTER TABLE {s}.jobs ADD COLUMN IF NOT EXISTS timeout_ms bigint`,
			`ALTER TABLE {s}.jobs ADD COLUMN IF NOT EXISTS tags text[]`,
			// The tag filter (tags @> ARRAY[tag]) reads this index; jobs
			// without tags are not in it, so they cost nothing to insert.
			`CREATE INDEX IF NOT EXISTS jobs_tags ON {s}.jobs USING gin (tags) WHERE tags IS NOT NULL`,
		},
	},
	{
		version: 5,
		name:    "named queues: the job's queue, paused queues",
		stmts: []string{
			`ALTER TABLE {s}.jobs ADD COLUMN IF NOT EXISTS queue text NOT NULL DEFAULT 'default'`,
			// Claims of one named queue walk this index in order.
			`CREATE INDEX IF NOT EXISTS jobs_claim_queue ON {s}.jobs (queue, priority DESC, id) WHERE status = 'pending'`,
			`CREATE TABLE IF NOT EXISTS {s}.queues (
				name text PRIMARY KEY,
				paused_at timestamptz,
				updated_at timestamptz NOT NULL
			)`,
		},
	},
	{
		version: 6,
		name:    "inserts that need not notify",
		stmts: []string{
			// A NOTIFY takes a database-wide lock from before its commit
			// until after it, so that notifying commits line up: every
			// insert notifying serialised concurrent inserts' commits and
			// woke every listener for each. The store's inserts now set
			// queuemax.quiet when one of its inserts notified less than
			// notifyWindow ago, and notify once more at the window's end.
			`CREATE OR REPLACE FUNCTION {s}.notify_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				IF current_setting('queuemax.quiet', true) IS DISTINCT FROM 'on' THEN
					PERFORM pg_notify(TG_TABLE_SCHEMA || '.jobs', '');
				END IF;
				RETURN NULL;
			END $$`,
		},
	},
	{
		version: 7,
		name:    "circuit breakers shared by every process (breakers.go)",
		stmts:   migrationBreakers,
	},
	{
		version: 8,
		name:    "global limits: state rows and queue rules",
		stmts:   limitsMigration,
	},
	{
		// workflow_schema.go
		version: 9, name: workflowMigration.name, stmts: workflowMigration.stmts,
	},
	{
		version: 10, name: workflowReleaseByKey.name, stmts: workflowReleaseByKey.stmts, // workflow_schema.go
	},
	{
		version: 11, name: workflowRetryMigration.name, stmts: workflowRetryMigration.stmts, // workflow_retry.go
	},
	{
		version: 12, name: "task catalogue: the tasks workers ran, kept after they stop (catalog.go)", stmts: migrationCatalog,
	},
	progressMigration, // progress.go
	{
		version: 14, name: workflowAckMigration.name, stmts: workflowAckMigration.stmts, // workflow_ack.go
	},
	workflowFillMigration, // workflow_ack.go
	{
		// A job's backoff base to the millisecond: retry_delay counted
		// whole seconds, so the engine had to look a finer one up in the
		// task's handler.
		version: 16, name: "retry_delay in milliseconds",
		stmts: []string{`UPDATE {s}.jobs SET retry_delay = LEAST(retry_delay::bigint * 1000, 2147483647) WHERE retry_delay <> 0`,
			`ALTER TABLE {s}.jobs ALTER COLUMN retry_delay SET DEFAULT 60000`},
	},
	workflowIndexMigration,  // workflow_cost.go
	workflowEndsMigration,   // workflow_cost.go
	workflowFill50Migration, // workflow_cost.go
}
