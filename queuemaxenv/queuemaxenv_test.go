package queuemaxenv_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxenv"
)

func TestConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"NUM_SHARDS": "4", "DATA_DIR": "/tmp/x", "QUEUE_MAX_RETRIES": "0", "RATE_LIMIT_MAX": "120",
		"DB_BUSY_TIMEOUT": "1000", "CACHE_SIZE": "500", "MMAP_SIZE": "0", "HEARTBEAT_INTERVAL": "2000",
		"STUCK_TIMEOUT": "9000", "RECOVERY_INTERVAL": "3000", "CLEANUP_DAYS": "2", "QUEUE_ALERT_THRESHOLD": "50",
		"CIRCUIT_FAILURE_THRESHOLD": "3", "CIRCUIT_TIMEOUT": "30", "QUEUE_MAX_LOG_LEVEL": "debug",
	}
	cfg, level, err := queuemaxenv.Config(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	want := queuemax.Config{Dir: "/tmp/x", Shards: 4, MaxRetries: queuemax.Ptr(0), RateLimit: queuemax.Rate{Limit: 120, Per: time.Minute}, BusyTimeout: time.Second,
		CacheSize: 500, HeartbeatInterval: 2 * time.Second, StuckTimeout: 9 * time.Second, RecoveryInterval: 3 * time.Second,
		CleanupAge: 48 * time.Hour, AlertThreshold: 50, CircuitThreshold: 3, CircuitTimeout: 30 * time.Second, MmapSize: -1}
	if diff := cmp.Diff(want, cfg, cmp.AllowUnexported(queuemax.Config{})); diff != "" {
		t.Errorf("Config mismatch (-want +got):\n%s", diff)
	}
	if level != slog.LevelDebug {
		t.Errorf("level = %v, want DEBUG", level)
	}
	_, _, err = queuemaxenv.Config(func(k string) string {
		if k == "NUM_SHARDS" {
			return "six"
		}
		return ""
	})
	if !errors.Is(err, queuemax.ErrInvalidConfig) || !strings.Contains(err.Error(), "NUM_SHARDS") {
		t.Errorf("bad NUM_SHARDS error = %v, want one naming NUM_SHARDS", err)
	}
}

func TestConfig_ExplicitValues(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	// Zero means off where off makes sense.
	cfg, _, err := queuemaxenv.Config(env("QUEUE_ALERT_THRESHOLD", "0", "CIRCUIT_FAILURE_THRESHOLD", "0",
		"RATE_LIMIT_MAX", "0", "MMAP_SIZE", "0"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AlertThreshold != queuemax.AlertOff || cfg.CircuitThreshold != queuemax.CircuitOff || cfg.RateLimit != (queuemax.Rate{}) || cfg.MmapSize != -1 {
		t.Errorf("zeros read as alert=%d circuit=%d rate=%+v mmap=%d; want queuemax.AlertOff, queuemax.CircuitOff, no limit, no mmap",
			cfg.AlertThreshold, cfg.CircuitThreshold, cfg.RateLimit, cfg.MmapSize)
	}
	// Otherwise a zero (or an out-of-range value) is refused, naming the
	// variable.
	for _, kv := range [][2]string{
		{"NUM_SHARDS", "0"}, {"NUM_SHARDS", "-1"}, {"NUM_SHARDS", "1025"},
		{"QUEUE_MAX_RETRIES", "-1"}, {"QUEUE_MAX_RETRIES", "1001"}, {"QUEUE_MAX_RETRIES", "9223372036854775807"},
		{"RATE_LIMIT_MAX", "-5"}, {"QUEUE_ALERT_THRESHOLD", "-1"}, {"CIRCUIT_FAILURE_THRESHOLD", "-2"},
		{"DB_BUSY_TIMEOUT", "0"}, {"STUCK_TIMEOUT", "0"}, {"HEARTBEAT_INTERVAL", "0"}, {"CIRCUIT_TIMEOUT", "0"},
		{"CLEANUP_DAYS", "0"}, {"CACHE_SIZE", "0"}, {"MMAP_SIZE", "-1"},
	} {
		_, _, err := queuemaxenv.Config(env(kv[0], kv[1]))
		ce, ok := errors.AsType[*queuemax.ConfigError](err)
		if !ok || ce.Field != kv[0] || !errors.Is(err, queuemax.ErrInvalidConfig) {
			t.Errorf("%s=%s: error %v, want a *queuemax.ConfigError naming %s", kv[0], kv[1], err, kv[0])
		}
	}
}

// TestConfig_CompletedRetention: QUEUE_MAX_COMPLETED_RETENTION takes a
// duration or seconds, 0 switching retention off.
func TestConfig_CompletedRetention(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  string
		want time.Duration
		bad  bool
	}{
		{"0", queuemax.RetentionOff, false},
		{"90", 90 * time.Second, false},
		{"2h", 2 * time.Hour, false},
		{" 30m ", 30 * time.Minute, false},
		{"-1", 0, true},
		{"-1h", 0, true},
		{"soon", 0, true},
	} {
		cfg, _, err := queuemaxenv.Config(func(k string) string {
			if k == "QUEUE_MAX_COMPLETED_RETENTION" {
				return tc.env
			}
			return ""
		})
		var ce *queuemax.ConfigError
		switch {
		case tc.bad && (!errors.As(err, &ce) || ce.Field != "QUEUE_MAX_COMPLETED_RETENTION"):
			t.Errorf("QUEUE_MAX_COMPLETED_RETENTION=%q: error %v, want a queuemax.ConfigError naming it", tc.env, err)
		case !tc.bad && (err != nil || cfg.CompletedRetention != tc.want):
			t.Errorf("QUEUE_MAX_COMPLETED_RETENTION=%q: %v, %v; want %v", tc.env, cfg.CompletedRetention, err, tc.want)
		}
	}
}
