// Package queuemaxenv reads a queuemax.Config from queue-max's environment
// variables (NUM_SHARDS, DATA_DIR, QUEUE_MAX_RETRIES, …; see .env.example),
// for programs configured the way queue-max is, such as the queuemax
// command:
//
//	cfg, level, err := queuemaxenv.Config(os.Getenv)
package queuemaxenv

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/runtime/shard"
)

// Config returns a queuemax.Config read from queue-max's environment variables
// through getenv (pass os.Getenv). Unset variables leave fields at zero, so
// defaults apply. Explicit values are honoured or refused, never replaced by
// a default: QUEUE_ALERT_THRESHOLD=0, CIRCUIT_FAILURE_THRESHOLD=0,
// RATE_LIMIT_MAX=0 and QUEUE_MAX_COMPLETED_RETENTION=0 switch alerts,
// breakers, the rate limit and completed-job retention off, while
// NUM_SHARDS=0 and a malformed or out-of-range value are a *ConfigError
// naming the variable (several are joined). It also returns the level named
// by QUEUE_MAX_LOG_LEVEL (default WARNING) for programs that build their
// own logger. QUEUE_MAX_DSN and QUEUE_MAX_SCHEMA name a PostgreSQL store,
// which Config does not open: read them with Postgres.
func Config(getenv func(string) string) (queuemax.Config, slog.Level, error) {
	var c queuemax.Config
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, &queuemax.ConfigError{Field: name, Msg: fmt.Sprintf(format, args...)})
	}
	intVar := func(name string, set func(int64)) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			bad(name, "%q is not an integer", v)
			return
		}
		set(n)
	}
	atLeast := func(name string, lo int64, set func(int64)) func(int64) {
		return func(n int64) {
			if n < lo {
				bad(name, "%d is out of range (want at least %d)", n, lo)
				return
			}
			set(n)
		}
	}
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	if v := getenv("DATA_DIR"); v != "" {
		c.Dir = v
	}
	intVar("NUM_SHARDS", func(n int64) {
		if n < 1 || n > shard.MaxShards {
			bad("NUM_SHARDS", "%d is out of range (want 1–%d)", n, shard.MaxShards)
			return
		}
		c.Shards = int(n)
	})
	intVar("QUEUE_MAX_RETRIES", func(n int64) {
		if n < 0 || n > queuemax.MaxRetriesLimit {
			bad("QUEUE_MAX_RETRIES", "%d is out of range (want 0–%d)", n, queuemax.MaxRetriesLimit)
			return
		}
		c.MaxRetries = queuemax.Ptr(int(n))
	})
	intVar("RATE_LIMIT_MAX", atLeast("RATE_LIMIT_MAX", 0, func(n int64) {
		if n > 0 { // 0: no limit
			c.RateLimit = queuemax.Rate{Limit: int(n), Per: time.Minute}
		}
	}))
	// Zero would mean "the default" in Config, so it is refused here.
	intVar("DB_BUSY_TIMEOUT", atLeast("DB_BUSY_TIMEOUT", 1, func(n int64) { c.BusyTimeout = ms(n) }))
	intVar("CACHE_SIZE", atLeast("CACHE_SIZE", 1, func(n int64) { c.CacheSize = int(n) }))
	intVar("MMAP_SIZE", atLeast("MMAP_SIZE", 0, func(n int64) {
		c.MmapSize = n
		if n == 0 {
			c.MmapSize = -1 // no mmap
		}
	}))
	intVar("HEARTBEAT_INTERVAL", atLeast("HEARTBEAT_INTERVAL", 1, func(n int64) { c.HeartbeatInterval = ms(n) }))
	intVar("STUCK_TIMEOUT", atLeast("STUCK_TIMEOUT", 1, func(n int64) { c.StuckTimeout = ms(n) }))
	intVar("RECOVERY_INTERVAL", atLeast("RECOVERY_INTERVAL", 1, func(n int64) { c.RecoveryInterval = ms(n) }))
	intVar("CLEANUP_DAYS", atLeast("CLEANUP_DAYS", 1, func(n int64) { c.CleanupAge = time.Duration(n) * 24 * time.Hour }))
	if v := strings.TrimSpace(getenv("QUEUE_MAX_COMPLETED_RETENTION")); v != "" {
		d, err := time.ParseDuration(v)
		if n, nerr := strconv.ParseInt(v, 10, 64); nerr == nil {
			d, err = time.Duration(n)*time.Second, nil
		}
		switch {
		case err != nil:
			bad("QUEUE_MAX_COMPLETED_RETENTION", "%q is not a duration (24h) or a number of seconds", v)
		case d < 0:
			bad("QUEUE_MAX_COMPLETED_RETENTION", "%q is negative", v)
		case d == 0:
			c.CompletedRetention = queuemax.RetentionOff
		default:
			c.CompletedRetention = d
		}
	}
	intVar("QUEUE_ALERT_THRESHOLD", atLeast("QUEUE_ALERT_THRESHOLD", 0, func(n int64) {
		c.AlertThreshold = int(n)
		if n == 0 {
			c.AlertThreshold = queuemax.AlertOff
		}
	}))
	intVar("CIRCUIT_FAILURE_THRESHOLD", atLeast("CIRCUIT_FAILURE_THRESHOLD", 0, func(n int64) {
		c.CircuitThreshold = int(n)
		if n == 0 {
			c.CircuitThreshold = queuemax.CircuitOff
		}
	}))
	intVar("CIRCUIT_TIMEOUT", atLeast("CIRCUIT_TIMEOUT", 1, func(n int64) { c.CircuitTimeout = time.Duration(n) * time.Second }))
	level := slog.LevelWarn
	if v := strings.ToUpper(strings.TrimSpace(getenv("QUEUE_MAX_LOG_LEVEL"))); v != "" {
		switch v {
		case "DEBUG":
			level = slog.LevelDebug
		case "INFO":
			level = slog.LevelInfo
		case "WARNING", "WARN":
			level = slog.LevelWarn
		case "ERROR", "CRITICAL":
			level = slog.LevelError
		default:
			bad("QUEUE_MAX_LOG_LEVEL", "%q is not DEBUG, INFO, WARNING or ERROR", v)
		}
	}
	return c, level, errors.Join(errs...)
}

// Postgres returns QUEUE_MAX_DSN and QUEUE_MAX_SCHEMA, for a program that
// opens the PostgreSQL store (module github.com/queuemax/queuemax/queuemaxpg)
// when a DSN is set:
//
//	if dsn, schema := queuemaxenv.Postgres(os.Getenv); dsn != "" {
//		cfg.Store, err = queuemaxpg.Open(ctx, dsn, queuemaxpg.Options{Schema: schema})
//	}
func Postgres(getenv func(string) string) (dsn, schema string) {
	return strings.TrimSpace(getenv("QUEUE_MAX_DSN")), strings.TrimSpace(getenv("QUEUE_MAX_SCHEMA"))
}
