package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain lets the cross-process latency scenario re-execute the test
// binary as the producer, as the real binary re-executes itself.
func TestMain(m *testing.M) {
	if os.Getenv("QUEUEMAX_BENCH_AS_MAIN") == "1" {
		main()
		return
	}
	goleak.VerifyTestMain(m)
}

func TestRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		wantCode int
	}{
		{name: "Help", args: []string{"-h"}, wantCode: exitOK},
		{name: "UnknownScenario", args: []string{"-scenarios", "bogus"}, wantCode: exitUsage},
		{name: "BadScale", args: []string{"-scale", "0"}, wantCode: exitUsage},
		{name: "UnknownStore", args: []string{"-store", "mysql"}, wantCode: exitUsage},
		{name: "SQLiteScenarioOnPostgres", args: []string{"-store", "postgres", "-scenarios", "burst"}, wantCode: exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			if got := run(t.Context(), tt.args, &stdout, &stderr); got != tt.wantCode {
				t.Errorf("run(%q) = %d, want %d; stderr:\n%s", tt.args, got, tt.wantCode, stderr.String())
			}
		})
	}
}

// TestRun_Smoke runs the quick scenarios at a tiny scale (a few seconds
// under -race; the others differ only in sizes and shard counts, and
// opening many shard files is slow under the race detector): the program
// must verify exactly-once delivery, measure the floor, re-execute itself
// as a producer, and write a JSON report with a figure for each scenario.
func TestRun_Smoke(t *testing.T) {
	t.Parallel()
	scenarios := []string{"contention", "failure", "latency"}
	out := filepath.Join(t.TempDir(), "bench.json")
	var stdout, stderr bytes.Buffer
	args := []string{"-scale", "0.0005", "-json", out, "-dir", t.TempDir(), "-scenarios", strings.Join(scenarios, ",")}
	if code := run(t.Context(), args, &stdout, &stderr); code != exitOK {
		t.Fatalf("run(%q) = %d, want %d; stdout:\n%s\nstderr:\n%s", args, code, exitOK, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("unmarshal report: %v", err)
	}
	seen := map[string]bool{}
	for _, r := range rep.Results {
		seen[strings.Fields(r.Scenario)[0]] = true
	}
	for _, s := range scenarios {
		if !seen[s] {
			t.Errorf("report has no result for scenario %q", s)
		}
	}
	if len(rep.Failures) > 0 {
		t.Errorf("report failures: %q", rep.Failures)
	}
}

func TestWithAppName(t *testing.T) {
	t.Parallel()
	got, err := withAppName("postgres://u@h:5432/db?sslmode=disable", "x")
	if err != nil || !strings.Contains(got, "application_name=x") || !strings.Contains(got, "sslmode=disable") {
		t.Errorf("withAppName = %q, %v; want both parameters", got, err)
	}
	if _, err := withAppName("host=h dbname=db", "x"); err == nil {
		t.Error("withAppName(key=value) = nil error, want one asking for a URL")
	}
}

func TestProcTicks(t *testing.T) {
	t.Parallel()
	// Burn CPU until the kernel has charged this process at least 50 ms
	// (five clock ticks), measured by getrusage, not by the wall clock: on
	// a loaded machine 50 ms of wall time may be less than one tick of CPU.
	start := cpuTime()
	for cpuTime()-start < 50*time.Millisecond {
	}
	n, err := procTicks(os.Getpid())
	if err != nil || n <= 0 {
		t.Errorf("procTicks(self) = %d, %v; want a positive count", n, err)
	}
	if _, err := procTicks(-1); err == nil {
		t.Error("procTicks(-1) = nil error")
	}
}
