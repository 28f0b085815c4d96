package main

import (
	"strings"
	"testing"
	"time"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/examples/tasks"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDemoConfig_HonoursTheEnvironment(t *testing.T) {
	t.Parallel()
	cfg, err := demoConfig(env(map[string]string{"DATA_DIR": "/tmp/q", "NUM_SHARDS": "3", "CIRCUIT_TIMEOUT": "5", "QUEUE_MAX_RETRIES": "1"}), "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Dir != "/tmp/q" || cfg.Shards != 3 || cfg.CircuitTimeout != 5*time.Second || *cfg.MaxRetries != 1 {
		t.Errorf("config = Dir %q Shards %d CircuitTimeout %s, want the environment's", cfg.Dir, cfg.Shards, cfg.CircuitTimeout)
	}
	if cfg.RetryDelay != 200*time.Millisecond || len(cfg.Handlers) == 0 {
		t.Errorf("the demo's own defaults are missing: %+v", cfg)
	}
	cfg, err = demoConfig(env(map[string]string{"DATA_DIR": "/tmp/q"}), "/tmp/flag")
	if err != nil || cfg.Dir != "/tmp/flag" || cfg.CircuitTimeout != time.Second {
		t.Errorf("-dir over DATA_DIR: Dir %q, %v", cfg.Dir, err)
	}
	if _, err := demoConfig(env(map[string]string{"NUM_SHARDS": "many"}), ""); err == nil || !strings.Contains(err.Error(), "NUM_SHARDS") {
		t.Errorf("bad NUM_SHARDS: err = %v", err)
	}
}

func TestExistingJobs(t *testing.T) {
	t.Parallel()
	cfg, err := demoConfig(env(map[string]string{"NUM_SHARDS": "2"}), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := queuemax.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if msg, err := existingJobs(t.Context(), c); err != nil || msg != "" {
		t.Errorf("empty queue: %q, %v", msg, err)
	}
	if _, err := tasks.New(c).SendEmail.Delay(t.Context(), "a@example.com", "hi"); err != nil {
		t.Fatal(err)
	}
	msg, err := existingJobs(t.Context(), c)
	if err != nil || !strings.Contains(msg, "already holds jobs: 1 pending") || !strings.Contains(msg, cfg.Dir) {
		t.Errorf("a queue with a job: %q, %v", msg, err)
	}
}
