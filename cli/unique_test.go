package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/queuemax/queuemax"
)

// TestEnqueueUnique: enqueue --unique-key stores one job per key while it
// waits, reports the duplicate (text and --json) and list shows the key.
func TestEnqueueUnique(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 3)
	d := []string{"--data-dir", dir}
	enq := append(d, "enqueue", "--any-task", "--task", "t.Report", "--unique-key", "acme-2026-12")
	first := ok(t, qm(t, append(enq, "--json")...), "first enqueue")
	var a struct {
		ID        queuemax.JobID `json:"id"`
		Duplicate bool           `json:"duplicate"`
	}
	if err := json.Unmarshal([]byte(first.stdout), &a); err != nil || a.Duplicate {
		t.Fatalf("first enqueue --json = %s (%v); want a new job", first.stdout, err)
	}
	again := ok(t, qm(t, append(enq, "--payload", `{"format":"csv"}`)...), "second enqueue")
	if want := "not enqueued: duplicate of t.Report job " + a.ID.String(); !strings.HasPrefix(again.stdout, want) {
		t.Errorf("second enqueue = %q; want it to start with %q", again.stdout, want)
	}
	ok(t, qm(t, append(d, "enqueue", "--any-task", "--task", "t.Report", "--unique-key", "globex")...), "other key")
	ok(t, qm(t, append(d, "enqueue", "--any-task", "--task", "t.Plain")...), "plain job")
	wantFail(t, qm(t, append(d, "enqueue", "--any-task", "--task", "t.Report", "--unique-key", "")...), 2, "--unique-key")

	jobs := listJobs(t, queuemaxBin, append(d, "list")...)
	if len(jobs) != 3 {
		t.Fatalf("list: %d jobs, want 3", len(jobs))
	}
	var key string
	for _, j := range jobs {
		if queuemax.JobID(j["id"].(float64)) == a.ID {
			key, _ = j["unique_key"].(string)
		} else if j["task"] == "t.Plain" && j["unique_key"] != nil {
			t.Errorf("plain job has unique_key %v", j["unique_key"])
		}
	}
	if len(key) != 64 {
		t.Fatalf("list --json unique_key = %q; want the 64-digit key", key)
	}
	table := ok(t, qm(t, append(d, "list")...), "list").stdout
	if !strings.Contains(table, "UNIQUE") || !strings.Contains(table, key[:12]) {
		t.Errorf("list table lacks the UNIQUE column with %s:\n%s", key[:12], table)
	}
	plain := ok(t, qm(t, append(d, "list", "--task", "t.Plain")...), "list plain").stdout
	if strings.Contains(plain, "UNIQUE") {
		t.Errorf("list of plain jobs shows a UNIQUE column:\n%s", plain)
	}
}
