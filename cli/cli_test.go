package cli_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/queuemax/queuemax"
)

// The binaries under test, built once by TestMain.
var (
	queuemaxBin string // cmd/queuemax: no task registry
	tasksBin    string // examples/tasks/cmd/tasks: the example registry
)

const taskPrefix = "github.com/queuemax/queuemax/examples/tasks."

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "queuemax-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	queuemaxBin = filepath.Join(dir, "queuemax")
	tasksBin = filepath.Join(dir, "tasks")
	for out, pkg := range map[string]string{
		queuemaxBin: "github.com/queuemax/queuemax/cmd/queuemax",
		tasksBin:    "github.com/queuemax/queuemax/examples/tasks/cmd/tasks",
	} {
		// Not -race: a race-enabled binary takes about a second to start.
		// The in-process tests cover the package under the race detector.
		cmd := exec.Command(goBin, "build", "-o", out, pkg)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n", pkg, err)
			return 1
		}
	}
	return m.Run()
}

// runtimeEnv names the environment variables the runtime reads; the tests
// run the binaries without them unless a test sets one.
var runtimeEnv = []string{"DATA_DIR", "NUM_SHARDS", "QUEUE_MAX_RETRIES", "RATE_LIMIT_MAX", "DB_BUSY_TIMEOUT",
	"CACHE_SIZE", "MMAP_SIZE", "HEARTBEAT_INTERVAL", "STUCK_TIMEOUT", "RECOVERY_INTERVAL", "CLEANUP_DAYS",
	"QUEUE_ALERT_THRESHOLD", "CIRCUIT_FAILURE_THRESHOLD", "CIRCUIT_TIMEOUT", "QUEUE_MAX_LOG_LEVEL", "QUEUE_MAX_DSN", "QUEUE_MAX_SCHEMA"}

func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(runtimeEnv, k) {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// result is what one run of a binary produced.
type result struct {
	code           int
	stdout, stderr string
}

// invocation describes one run of a binary.
type invocation struct {
	bin   string
	args  []string
	stdin string   // empty: /dev/null
	env   []string // added to the cleaned environment
}

func (inv invocation) run(t *testing.T) result {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), inv.bin, inv.args...)
	cmd.Env = cleanEnv(inv.env...)
	if inv.stdin != "" {
		cmd.Stdin = strings.NewReader(inv.stdin)
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		res.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %q: %v", filepath.Base(inv.bin), inv.args, err)
	}
	return res
}

// qm runs cmd/queuemax with args.
func qm(t *testing.T, args ...string) result {
	t.Helper()
	return invocation{bin: queuemaxBin, args: args}.run(t)
}

// tk runs the example tasks binary with args.
func tk(t *testing.T, args ...string) result {
	t.Helper()
	return invocation{bin: tasksBin, args: args}.run(t)
}

// ok fails the test unless res succeeded with an empty stderr.
func ok(t *testing.T, res result, what string) result {
	t.Helper()
	if res.code != 0 || res.stderr != "" {
		t.Fatalf("%s: exit %d, stderr %q, stdout:\n%s", what, res.code, res.stderr, res.stdout)
	}
	return res
}

// wantFail checks res's exit status and that stderr is one line holding
// every part of want.
func wantFail(t *testing.T, res result, code int, want ...string) {
	t.Helper()
	if res.code != code {
		t.Errorf("exit status %d, want %d; stderr %q", res.code, code, res.stderr)
	}
	if n := strings.Count(res.stderr, "\n"); n != 1 || !strings.HasSuffix(res.stderr, "\n") {
		t.Errorf("stderr has %d lines, want one: %q", n, res.stderr)
	}
	for _, w := range want {
		if !strings.Contains(res.stderr, w) {
			t.Errorf("stderr %q does not contain %q", res.stderr, w)
		}
	}
}

// newQueue creates an empty queue of shards shard files (0: the default).
func newQueue(t *testing.T, shards int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	withClient(t, dir, shards, func(*queuemax.Client) {})
	return dir
}

// withClient runs fn on a client of dir opened in this process, for
// setting up states the binaries then inspect.
func withClient(t *testing.T, dir string, shards int, fn func(c *queuemax.Client)) {
	t.Helper()
	c, err := queuemax.Open(t.Context(), queuemax.Config{Dir: dir, Shards: shards,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	fn(c)
}

// stats is the part of stats --json the tests read.
type stats struct {
	DataDir        string `json:"data_dir"`
	Pending        int64  `json:"pending"`
	Scheduled      int64  `json:"scheduled"`
	Processing     int64  `json:"processing"`
	Failed         int64  `json:"failed"`
	Completed      int64  `json:"completed"`
	DeadLetters    int64  `json:"dead_letters"`
	TotalProcessed int64  `json:"total_processed"`
	TotalFailed    int64  `json:"total_failed"`
	NumShards      int    `json:"num_shards"`
	IsHealthy      bool   `json:"is_healthy"`
	Shards         []struct {
		Shard   int   `json:"shard"`
		Pending int64 `json:"pending"`
		Healthy bool  `json:"healthy"`
	} `json:"shards"`
}

func getStats(t *testing.T, dir string) stats {
	t.Helper()
	res := ok(t, qm(t, "--data-dir", dir, "stats", "--json"), "stats --json")
	var s stats
	if err := json.Unmarshal([]byte(res.stdout), &s); err != nil {
		t.Fatalf("stats --json: %v\n%s", err, res.stdout)
	}
	return s
}

// snapshot is the observable state of a data dir: its files and counts.
type snapshot struct {
	Files []string
	Stats stats
}

func snap(t *testing.T, dir string) snapshot {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var s snapshot
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), "-wal") && !strings.HasSuffix(e.Name(), "-shm") {
			s.Files = append(s.Files, e.Name())
		}
	}
	s.Stats = getStats(t, dir)
	return s
}

func listJobs(t *testing.T, bin string, args ...string) []map[string]any {
	t.Helper()
	res := ok(t, invocation{bin: bin, args: append(args, "--json")}.run(t), fmt.Sprint(args))
	var jobs []map[string]any
	if err := json.Unmarshal([]byte(res.stdout), &jobs); err != nil {
		t.Fatalf("%q --json: %v\n%s", args, err, res.stdout)
	}
	return jobs
}

func TestHelp(t *testing.T) {
	t.Parallel()
	res := ok(t, qm(t, "--help"), "--help")
	for _, c := range []string{"stats", "list", "enqueue", "retry", "dlq", "recover", "purge", "periodic", "wait", "worker", "--data-dir", "--shards"} {
		if !strings.Contains(res.stdout, c) {
			t.Errorf("queuemax --help does not mention %s:\n%s", c, res.stdout)
		}
	}
	for _, c := range []string{"stats", "list", "enqueue", "retry", "dlq", "recover", "purge", "periodic", "wait", "worker"} {
		res := ok(t, qm(t, c, "--help"), c+" --help")
		if !strings.HasPrefix(res.stdout, "Usage: queuemax "+c) || !strings.Contains(res.stdout, "--data-dir DIR") {
			t.Errorf("queuemax %s --help:\n%s", c, res.stdout)
		}
		if help := ok(t, qm(t, "help", c), "help "+c); help.stdout != res.stdout {
			t.Errorf("queuemax help %s differs from %s --help", c, c)
		}
	}
	res = ok(t, tk(t, "worker", "-h"), "tasks worker -h")
	for _, f := range []string{"--tasks A,B", "--concurrency C", "--workers N", "--drain-timeout", "--create"} {
		if !strings.Contains(res.stdout, f) {
			t.Errorf("tasks worker --help does not mention %s:\n%s", f, res.stdout)
		}
	}
	// No command: the help, on stderr, and a usage error.
	res = qm(t)
	if res.code != 2 || !strings.Contains(res.stderr, "Usage: queuemax") || !strings.HasSuffix(res.stderr, "queuemax: no command given\n") {
		t.Errorf("queuemax with no command: exit %d, stderr:\n%s", res.code, res.stderr)
	}
}

// TestUsageErrors checks that bad command lines exit 2 with one line
// naming the problem, and change nothing in an existing queue.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 3)
	ok(t, tk(t, "--data-dir", dir, "enqueue", "--task", "SendEmail", "--payload", `{"to":"a@example.com","subject":"x"}`), "enqueue")
	before := snap(t, dir)
	jsonl := filepath.Join(t.TempDir(), "jobs.jsonl")
	if err := os.WriteFile(jsonl, []byte(`{"task":"`+taskPrefix+`SendEmail","payload":{}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := []string{"--data-dir", dir}
	tests := []struct {
		name string
		bin  string
		args []string
		want []string
	}{
		{"UnknownCommand", queuemaxBin, []string{"statz"}, []string{`unknown command "statz"`, `did you mean "stats"`}},
		{"UnknownCommandFarOff", queuemaxBin, []string{"frobnicate"}, []string{`unknown command "frobnicate"`, "queuemax help"}},
		{"UnknownFlag", queuemaxBin, append(d, "stats", "--bogus"), []string{"queuemax stats: unknown flag --bogus"}},
		{"UnknownGlobalFlag", queuemaxBin, []string{"--bogus", "stats"}, []string{"unknown flag --bogus"}},
		{"BadFlagValue", queuemaxBin, append(d, "list", "--limit", "many"), []string{`invalid value "many" for flag --limit`}},
		{"BadShards", queuemaxBin, []string{"--shards", "0", "stats"}, []string{`invalid value "0" for flag --shards`}},
		{"ExtraArgument", queuemaxBin, append(d, "stats", "now"), []string{`unexpected argument "now"`}},
		{"BadStatus", queuemaxBin, append(d, "list", "--status", "done"), []string{`--status "done"`}},
		{"ShardOutOfRange", queuemaxBin, append(d, "stats", "--shard", "3"), []string{"--shard 3: the data dir has 3 shards"}},
		{"StatsNegativeShard", queuemaxBin, append(d, "stats", "--shard", "-1"), []string{"--shard -1: the data dir has 3 shards"}},
		{"ListNegativeShard", queuemaxBin, append(d, "list", "--shard", "-1"), []string{"--shard -1: the data dir has 3 shards"}},
		{"ListDeadAndOther", queuemaxBin, append(d, "list", "--status", "dead,failed"), []string{"cannot be combined"}},
		{"DLQRequeueFilterAndID", queuemaxBin, append(d, "dlq", "requeue", "--task", "x", "--shard", "1", "--id", "1"), []string{"cannot be combined with --shard"}},
		{"ZeroLimit", queuemaxBin, append(d, "list", "--limit", "0"), []string{"--limit 0"}},
		{"InvalidJSON", tasksBin, append(d, "enqueue", "--task", "SendEmail", "--payload", `{"to":`), []string{"--payload is not valid JSON"}},
		{"PayloadNotObject", queuemaxBin, append(d, "enqueue", "--task", "x", "--payload", `[1,2]`), []string{"--payload must be a JSON object"}},
		{"UnknownTask", tasksBin, append(d, "enqueue", "--task", "SendMail"), []string{`unknown task "SendMail"`, "tasks.SendEmail"}},
		{"NoTask", tasksBin, append(d, "enqueue"), []string{"--task is required"}},
		{"NoTaskNoRegistry", queuemaxBin, append(d, "enqueue"), []string{"--task is required"}},
		{"AtAndIn", queuemaxBin, append(d, "enqueue", "--task", "x", "--at", "2030-01-01T00:00:00Z", "--in", "1h"), []string{"--at and --in cannot be combined"}},
		{"BadAt", queuemaxBin, append(d, "enqueue", "--task", "x", "--at", "tomorrow"), []string{`invalid value "tomorrow" for flag --at`}},
		{"BadPriority", queuemaxBin, append(d, "enqueue", "--task", "x", "--priority", "urgent"), []string{"--priority"}},
		{"NegativeRetries", queuemaxBin, append(d, "enqueue", "--task", "x", "--max-retries", "-1"), []string{"--max-retries -1"}},
		{"FileAndTask", queuemaxBin, append(d, "enqueue", "--file", jsonl, "--task", "x"), []string{"--task cannot be combined with --file"}},
		{"PurgeNeedsWhat", queuemaxBin, append(d, "purge", "--yes"), []string{"purge needs --status or --days"}},
		{"PurgeDead", queuemaxBin, append(d, "purge", "--status", "dead", "--yes"), []string{"--status dead"}},
		{"PurgeNotTTY", queuemaxBin, append(d, "purge", "--status", "pending"), []string{"refusing to delete without --yes"}},
		{"RetryBadID", queuemaxBin, append(d, "retry", "--job-id", "abc"), []string{"--job-id"}},
		{"RetryIDShardMismatch", queuemaxBin, append(d, "retry", "--job-id", "2:5", "--shard", "1"), []string{"is in shard 2, not --shard 1"}},
		{"DLQRequeueNoID", queuemaxBin, append(d, "dlq", "requeue", "--shard", "1"), []string{"needs --shard and --id, or --all, --task or --error"}},
		{"DLQUnknown", queuemaxBin, append(d, "dlq", "purge"), []string{`unknown dlq command "purge"`}},
		{"WorkerWithoutRegistry", queuemaxBin, append(d, "worker"), []string{"this binary has no tasks", "cli.Main"}},
		{"WorkerUnknownTask", tasksBin, append(d, "worker", "--tasks", "SendEmail,Nope"), []string{`unknown task "Nope"`}},
		{"WorkerZeroWorkers", tasksBin, append(d, "worker", "--workers", "0"), []string{"--workers 0"}},
		{"BadEnv", queuemaxBin, append(d, "stats"), []string{"NUM_SHARDS"}},
		{"HelpUnknown", queuemaxBin, []string{"help", "statz"}, []string{`unknown command "statz"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := invocation{bin: tt.bin, args: tt.args}
			if tt.name == "BadEnv" {
				inv.env = []string{"NUM_SHARDS=six"}
			}
			wantFail(t, inv.run(t), 2, tt.want...)
		})
	}
	if diff := cmp.Diff(before, snap(t, dir)); diff != "" {
		t.Errorf("usage errors changed the queue (-before +after):\n%s", diff)
	}
}

// TestMissingDataDir checks that no command creates a data dir that does
// not exist, or shard files in a directory without a queue, unless given
// --create.
func TestMissingDataDir(t *testing.T) {
	t.Parallel()
	commands := [][]string{
		{"stats"}, {"list"}, {"periodic"}, {"wait"}, {"dlq"}, {"dlq", "list"},
		{"enqueue", "--task", "SendEmail"}, {"retry"}, {"recover"}, {"purge", "--status", "failed", "--yes"},
		{"dlq", "requeue", "--all"}, {"worker"},
	}
	for _, args := range commands {
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			t.Parallel()
			missing := filepath.Join(t.TempDir(), "typo")
			res := tk(t, append([]string{"--data-dir", missing}, args...)...)
			wantFail(t, res, 1, "data dir "+missing+" does not exist")
			if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%q created %s (stat: %v)", args, missing, err)
			}
			empty := t.TempDir()
			res = tk(t, append([]string{"--data-dir", empty}, args...)...)
			wantFail(t, res, 1, "holds no queue")
			if entries, _ := os.ReadDir(empty); len(entries) > 0 {
				t.Errorf("%q wrote %d files into a directory without a queue", args, len(entries))
			}
		})
	}
	t.Run("EnqueueCreate", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "new")
		ok(t, tk(t, "--data-dir", dir, "--shards", "2", "enqueue", "--create", "--task", "CleanupOldData"), "enqueue --create")
		if s := getStats(t, dir); s.NumShards != 2 || s.Pending != 1 {
			t.Errorf("after enqueue --create: %d shards, %d pending; want 2 and 1", s.NumShards, s.Pending)
		}
	})
	t.Run("EnvDataDir", func(t *testing.T) {
		t.Parallel()
		dir := newQueue(t, 2)
		res := ok(t, invocation{bin: queuemaxBin, args: []string{"stats", "--json"}, env: []string{"DATA_DIR=" + dir}}.run(t), "DATA_DIR stats")
		if !strings.Contains(res.stdout, `"num_shards": 2`) {
			t.Errorf("stats with DATA_DIR: %s", res.stdout)
		}
		// The flag wins over the environment.
		missing := filepath.Join(t.TempDir(), "nope")
		res = invocation{bin: queuemaxBin, args: []string{"--data-dir", missing, "stats"}, env: []string{"DATA_DIR=" + dir}}.run(t)
		wantFail(t, res, 1, missing)
	})
}

func TestShardMismatch(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 0)
	before := snap(t, dir)
	for _, args := range [][]string{
		{"stats"}, {"list"}, {"periodic"}, {"wait"}, {"dlq"}, {"retry"}, {"recover"},
		{"enqueue", "--task", "SendEmail"}, {"enqueue", "--create", "--task", "SendEmail"},
		{"purge", "--status", "failed", "--yes"}, {"worker", "--create"},
	} {
		res := tk(t, append([]string{"--data-dir", dir, "--shards", "4"}, args...)...)
		wantFail(t, res, 1, "shard count does not match data directory", "holds 6 shard files", "config says 4")
	}
	// NUM_SHARDS says the same, with --data-dir after the command.
	for _, c := range []string{"stats", "list", "retry"} {
		res := invocation{bin: queuemaxBin, args: []string{c, "--data-dir", dir}, env: []string{"NUM_SHARDS=5"}}.run(t)
		wantFail(t, res, 1, "shard count does not match", "config says 5")
	}
	if diff := cmp.Diff(before, snap(t, dir)); diff != "" {
		t.Errorf("a shard mismatch changed the queue (-before +after):\n%s", diff)
	}
}

func TestEnqueueAndList(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 0)
	d := []string{"--data-dir", dir}

	res := ok(t, tk(t, append(d, "enqueue", "--task", "SendEmail", "--payload", `{"to":"a@example.com","subject":"Hi"}`)...), "enqueue")
	if !regexp.MustCompile(`^enqueued tasks.SendEmail job \d+ on shard \d\n$`).MatchString(res.stdout) {
		t.Errorf("enqueue output %q", res.stdout)
	}
	// Options, --json, and flags after the command.
	res = ok(t, tk(t, "enqueue", "--data-dir", dir, "--task", "tasks.GenerateReport", "--payload", `{"user_id":7,"month":"2026-11"}`,
		"--priority", "high", "--key", "42", "--max-retries", "0", "--json"), "enqueue --json")
	var e struct {
		ID    int64  `json:"id"`
		Shard int    `json:"shard"`
		Task  string `json:"task"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &e); err != nil {
		t.Fatalf("enqueue --json: %v: %s", err, res.stdout)
	}
	if e.Shard != 42%6 || e.Task != taskPrefix+"GenerateReport" {
		t.Errorf("enqueue --json = %+v, want shard %d, task %sGenerateReport", e, 42%6, taskPrefix)
	}
	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	ok(t, tk(t, append(d, "enqueue", "--task", "SendEmail", "--payload", `{"to":"b@example.com","subject":"Later"}`, "--at", at)...), "enqueue --at")
	res = ok(t, qm(t, append(d, "enqueue", "--task", taskPrefix+"CleanupOldData", "--in", "90m", "--priority", "1")...), "enqueue --in")
	if !strings.Contains(res.stdout, "to run at") {
		t.Errorf("enqueue --in output %q", res.stdout)
	}

	pending := listJobs(t, queuemaxBin, append(d, "list", "--status", "pending")...)
	if len(pending) != 2 {
		t.Fatalf("list --status pending: %d jobs, want 2: %v", len(pending), pending)
	}
	report := pending[0]
	if pending[1]["task"] == taskPrefix+"GenerateReport" {
		report = pending[1]
	}
	want := map[string]any{"priority": 2.0, "max_attempts": 1.0, "key": 42.0, "status": "pending", "id": float64(e.ID)}
	for k, v := range want {
		if report[k] != v {
			t.Errorf("GenerateReport job %s = %v, want %v", k, report[k], v)
		}
	}
	// SendEmail's defaults come from its annotation: priority 2, 5 retries.
	emails := listJobs(t, tasksBin, append(d, "list", "--task", "SendEmail")...)
	if len(emails) != 2 {
		t.Fatalf("list --task SendEmail: %d jobs, want 2", len(emails))
	}
	for _, j := range emails {
		if j["priority"] != 2.0 || j["max_attempts"] != 6.0 {
			t.Errorf("SendEmail job: priority %v, max_attempts %v; want 2 and 6", j["priority"], j["max_attempts"])
		}
	}
	if got := listJobs(t, queuemaxBin, append(d, "list", "--status", "scheduled")...); len(got) != 2 {
		t.Errorf("list --status scheduled: %d jobs, want 2", len(got))
	}
	if got := listJobs(t, queuemaxBin, append(d, "list", "--limit", "3")...); len(got) != 3 {
		t.Errorf("list --limit 3: %d jobs, want 3", len(got))
	}
	if got := listJobs(t, queuemaxBin, append(d, "list", "--shard", fmt.Sprint(e.Shard), "--status", "pending", "--task", taskPrefix+"GenerateReport")...); len(got) != 1 {
		t.Errorf("list --shard --status --task: %d jobs, want 1", len(got))
	}

	res = ok(t, tk(t, append(d, "list")...), "list")
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "ID ") || !strings.Contains(res.stdout, "tasks.GenerateReport") ||
		!strings.Contains(res.stdout, "runs in 59m") {
		t.Errorf("list table:\n%s", res.stdout)
	}
	res = ok(t, qm(t, append(d, "list", "--status", "failed")...), "list failed")
	if res.stdout != "no failed jobs\n" {
		t.Errorf("list --status failed on no failed jobs: %q", res.stdout)
	}
	res = ok(t, qm(t, append(d, "list", "--task", "SendEmail")...), "list short name without registry")
	if !strings.Contains(res.stdout, "takes the full name") {
		t.Errorf("list --task SendEmail without registry: %q", res.stdout)
	}

	s := getStats(t, dir)
	if s.Pending != 2 || s.Scheduled != 2 || s.NumShards != 6 || len(s.Shards) != 6 || !s.IsHealthy || s.DataDir != dir {
		t.Errorf("stats --json = %+v", s)
	}
	res = ok(t, qm(t, append(d, "stats")...), "stats")
	for _, w := range []string{"Data dir", "Shards", "Healthy", "Max retries", "Rate limit", "Circuit", "SHARD", "PENDING", "SCHEDULED", "DLQ", "total  2        2"} {
		if !strings.Contains(res.stdout, w) {
			t.Errorf("stats table lacks %q:\n%s", w, res.stdout)
		}
	}
	res = ok(t, qm(t, append(d, "stats", "--shard", fmt.Sprint(e.Shard), "--json")...), "stats --shard --json")
	var sh struct {
		Shard   int   `json:"shard"`
		Pending int64 `json:"pending"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &sh); err != nil || sh.Shard != e.Shard || sh.Pending < 1 {
		t.Errorf("stats --shard %d --json = %s (%v)", e.Shard, res.stdout, err)
	}
}

func TestEnqueueFile(t *testing.T) {
	t.Parallel()
	files := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(files, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var lines []string
	for i := range 30 {
		lines = append(lines, fmt.Sprintf(`{"task":"%sSendEmail","payload":{"to":"u%d@example.com","subject":"Hi"},"key":%d}`, taskPrefix, i, i))
	}
	good := write("good.jsonl", strings.Join(lines, "\n")+"\n\n")
	array := write("array.json", "[\n  "+strings.Join(lines[:4], ",\n  ")+"\n]\n")
	badLine := write("bad.jsonl", lines[0]+"\n"+lines[1]+"\n{\"task\": \"x\", \"payload\": {]\n"+lines[2]+"\n")
	notObject := write("notobject.jsonl", lines[0]+"\n"+`{"task":"x","payload":[1]}`+"\n")
	unknownTask := write("unknown.jsonl", lines[0]+"\n"+lines[1]+"\n"+`{"task":"`+taskPrefix+`SendMail","payload":{}}`+"\n")
	shortName := write("short.jsonl", `{"task":"SendEmail","payload":{}}`+"\n")

	dir := newQueue(t, 0)
	d := []string{"--data-dir", dir}
	before := snap(t, dir)
	for _, tt := range []struct {
		name string
		bin  string
		file string
		want []string
	}{
		{"BadLine", queuemaxBin, badLine, []string{badLine + ":3:"}},
		{"NotObject", queuemaxBin, notObject, []string{notObject + ":2:", "invalid payload"}},
		{"UnknownTask", tasksBin, unknownTask, []string{unknownTask + ":3:", `unknown task "` + taskPrefix + `SendMail"`}},
		{"ShortName", tasksBin, shortName, []string{shortName + ":1:", "write the full name"}},
	} {
		res := invocation{bin: tt.bin, args: append(d, "enqueue", "--file", tt.file)}.run(t)
		t.Run(tt.name, func(t *testing.T) { wantFail(t, res, 2, tt.want...) })
	}
	wantFail(t, qm(t, append(d, "enqueue", "--file", filepath.Join(files, "missing.jsonl"))...), 1, "missing.jsonl")
	if diff := cmp.Diff(before, snap(t, dir)); diff != "" {
		t.Errorf("a bad file changed the queue (-before +after):\n%s", diff)
	}

	res := ok(t, tk(t, append(d, "enqueue", "--file", good)...), "enqueue --file")
	if res.stdout != "enqueued 30 jobs from "+good+"\n" {
		t.Errorf("enqueue --file output %q", res.stdout)
	}
	res = ok(t, qm(t, append(d, "enqueue", "--file", array, "--json")...), "enqueue --file array")
	if !strings.Contains(res.stdout, `"enqueued": 4`) {
		t.Errorf("enqueue --file array --json: %s", res.stdout)
	}
	if s := getStats(t, dir); s.Pending != 34 {
		t.Errorf("pending after the files = %d, want 34", s.Pending)
	}
}

// deadJobs enqueues n jobs of task in dir and fails each one permanently,
// so that they are dead-lettered.
func deadJobs(t *testing.T, dir, task string, n int) []queuemax.JobID {
	t.Helper()
	var ids []queuemax.JobID
	withClient(t, dir, 0, func(c *queuemax.Client) {
		for i := range n {
			id, err := c.Enqueue(t.Context(), task, map[string]any{"n": i}, queuemax.Opts{})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		jobs, err := c.Claim(t.Context(), "test", n)
		if err != nil || len(jobs) != n {
			t.Fatalf("Claim: %d jobs, %v", len(jobs), err)
		}
		for _, j := range jobs {
			if _, err := c.Fail(t.Context(), j, queuemax.Permanent(errors.New("boom"))); err != nil {
				t.Fatal(err)
			}
		}
	})
	return ids
}

func TestRetryAndDLQ(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 0)
	d := []string{"--data-dir", dir}
	ids := deadJobs(t, dir, taskPrefix+"SendEmail", 5)

	if s := getStats(t, dir); s.Failed != 5 || s.DeadLetters != 5 {
		t.Fatalf("after failing 5 jobs: failed %d, dead letters %d", s.Failed, s.DeadLetters)
	}
	dead := listJobs(t, tasksBin, append(d, "list", "--status", "dead")...)
	if len(dead) != 5 || dead[0]["error"] != "boom" {
		t.Fatalf("list --status dead: %v", dead)
	}
	res := ok(t, qm(t, append(d, "dlq")...), "dlq")
	if !strings.Contains(res.stdout, "DLQ ID") || strings.Count(res.stdout, "tasks.SendEmail") != 5 {
		t.Errorf("dlq table:\n%s", res.stdout)
	}
	if got := listJobs(t, queuemaxBin, append(d, "dlq", "list", "--limit", "2")...); len(got) != 2 {
		t.Errorf("dlq list --limit 2: %d rows", len(got))
	}

	// One job by ID, then a shard, then everything.
	res = ok(t, qm(t, append(d, "retry", "--job-id", ids[0].String())...), "retry --job-id")
	if res.stdout != "retried job "+ids[0].String()+"\n" {
		t.Errorf("retry --job-id: %q", res.stdout)
	}
	wantFail(t, qm(t, append(d, "retry", "--job-id", ids[0].String())...), 1, "is not a failed job")
	shard := ids[1].Shard()
	inShard := 0
	for _, id := range ids[1:] {
		if id.Shard() == shard {
			inShard++
		}
	}
	res = ok(t, qm(t, append(d, "retry", "--shard", fmt.Sprint(shard), "--json")...), "retry --shard")
	if !strings.Contains(res.stdout, fmt.Sprintf(`"retried": %d`, inShard)) {
		t.Errorf("retry --shard %d --json = %s, want %d", shard, res.stdout, inShard)
	}
	res = ok(t, qm(t, append(d, "retry")...), "retry")
	jobs := "jobs"
	if 4-inShard == 1 {
		jobs = "job"
	}
	if want := fmt.Sprintf("retried %d failed %s across all shards\n", 4-inShard, jobs); res.stdout != want {
		t.Errorf("retry = %q, want %q", res.stdout, want)
	}
	if s := getStats(t, dir); s.Failed != 0 || s.DeadLetters != 0 || s.Pending != 5 {
		t.Errorf("after retry: %+v", s)
	}

	// dlq requeue: one row, then --all.
	deadJobs(t, dir, taskPrefix+"CallWebhook", 3)
	rows := listJobs(t, queuemaxBin, append(d, "dlq")...)
	if len(rows) != 3 {
		t.Fatalf("dlq: %d rows, want 3", len(rows))
	}
	res = ok(t, qm(t, append(d, "dlq", "requeue", "--shard", fmt.Sprint(rows[0]["shard"]), "--id", fmt.Sprint(rows[0]["id"]))...), "dlq requeue")
	if !strings.HasPrefix(res.stdout, "requeued dead letter ") {
		t.Errorf("dlq requeue: %q", res.stdout)
	}
	wantFail(t, qm(t, append(d, "dlq", "requeue", "--shard", fmt.Sprint(rows[0]["shard"]), "--id", fmt.Sprint(rows[0]["id"]))...), 1, "no dead letter")
	res = ok(t, qm(t, append(d, "dlq", "requeue", "--all")...), "dlq requeue --all")
	if res.stdout != "requeued 2 dead letters\n" {
		t.Errorf("dlq requeue --all: %q", res.stdout)
	}
	if s := getStats(t, dir); s.DeadLetters != 0 || s.Pending != 8 {
		t.Errorf("after dlq requeue: %+v", s)
	}
	res = ok(t, qm(t, append(d, "dlq")...), "dlq empty")
	if res.stdout != "no dead letters\n" {
		t.Errorf("empty dlq: %q", res.stdout)
	}
}

func TestRecover(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 0)
	withClient(t, dir, 0, func(c *queuemax.Client) {
		for range 2 {
			if _, err := c.Enqueue(t.Context(), taskPrefix+"SendEmail", map[string]any{}, queuemax.Opts{}); err != nil {
				t.Fatal(err)
			}
		}
		// Claimed and never acknowledged: the worker "died".
		if jobs, err := c.Claim(t.Context(), "dead-worker", 2); err != nil || len(jobs) != 2 {
			t.Fatalf("Claim: %d, %v", len(jobs), err)
		}
	})
	d := []string{"--data-dir", dir}
	res := ok(t, qm(t, append(d, "recover")...), "recover")
	if res.stdout != "recovered 0 orphaned jobs: 0 back to pending, 0 dead-lettered\n" {
		t.Errorf("recover of fresh claims: %q", res.stdout)
	}
	res = ok(t, qm(t, append(d, "recover", "--older-than", "1ms", "--json")...), "recover --older-than")
	if !strings.Contains(res.stdout, `"requeued": 2`) {
		t.Errorf("recover --older-than 1ms --json: %s", res.stdout)
	}
	if s := getStats(t, dir); s.Processing != 0 || s.Pending != 2 {
		t.Errorf("after recover: %+v", s)
	}
}

func TestPurge(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 0)
	d := []string{"--data-dir", dir}
	deadJobs(t, dir, "x", 2)
	for _, args := range [][]string{{"--task", "a"}, {"--task", "b", "--in", "1h"}, {"--task", "c"}} {
		ok(t, qm(t, append(append(d, "enqueue"), args...)...), "enqueue")
	}
	before := snap(t, dir)
	wantFail(t, qm(t, append(d, "purge", "--status", "pending")...), 2, "refusing to delete without --yes")
	if diff := cmp.Diff(before, snap(t, dir)); diff != "" {
		t.Errorf("purge without --yes changed the queue (-before +after):\n%s", diff)
	}
	res := ok(t, qm(t, append(d, "purge", "--status", "pending", "--status", "scheduled", "--yes")...), "purge")
	if res.stdout != "deleted 3 jobs (pending, scheduled)\n" {
		t.Errorf("purge --status pending --status scheduled: %q", res.stdout)
	}
	res = ok(t, qm(t, append(d, "purge", "--status", "failed,completed", "--yes", "--json")...), "purge comma list")
	if !strings.Contains(res.stdout, `"jobs": 2`) {
		t.Errorf("purge --status failed,completed: %s", res.stdout)
	}
	if s := getStats(t, dir); s.Pending+s.Scheduled+s.Failed != 0 || s.DeadLetters != 2 {
		t.Errorf("after purge: %+v", s)
	}
	res = ok(t, qm(t, append(d, "purge", "--days", "1", "--yes")...), "purge --days 1")
	if res.stdout != "deleted 0 finished jobs and 0 dead letters older than 1 day\n" {
		t.Errorf("purge --days 1: %q", res.stdout)
	}
	res = ok(t, qm(t, append(d, "purge", "--days", "0", "--yes")...), "purge --days 0")
	if res.stdout != "deleted 0 finished jobs and 2 dead letters older than 0 days\n" {
		t.Errorf("purge --days 0: %q", res.stdout)
	}
}

// TestPurgeConfirm answers purge's question on a terminal, which script(1)
// provides.
func TestPurgeConfirm(t *testing.T) {
	t.Parallel()
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) not installed: no terminal to test on")
	}
	dir := newQueue(t, 0)
	ok(t, qm(t, "--data-dir", dir, "enqueue", "--task", "a"), "enqueue")
	line := fmt.Sprintf("%s --data-dir %s purge --status pending", queuemaxBin, dir)
	for _, tt := range []struct {
		answer, want string
		pending      int64
	}{
		{"n\n", "nothing deleted", 1},
		{"y\n", "deleted 1 job (pending)", 0},
	} {
		res := invocation{bin: script, args: []string{"-qec", line, "/dev/null"}, stdin: tt.answer}.run(t)
		if res.code != 0 || !strings.Contains(res.stdout, "Delete 1 job (1 pending) from "+dir+"? [y/N]") || !strings.Contains(res.stdout, tt.want) {
			t.Errorf("purge answered %q: exit %d, output:\n%s%s", tt.answer, res.code, res.stdout, res.stderr)
		}
		if s := getStats(t, dir); s.Pending != tt.pending {
			t.Errorf("purge answered %q: %d pending, want %d", tt.answer, s.Pending, tt.pending)
		}
	}
}

func TestWait(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 0)
	d := []string{"--data-dir", dir}
	res := ok(t, qm(t, append(d, "wait")...), "wait on an empty queue")
	if !strings.HasPrefix(res.stdout, "queue empty after ") {
		t.Errorf("wait: %q", res.stdout)
	}
	ok(t, qm(t, append(d, "enqueue", "--task", "a")...), "enqueue")
	res = qm(t, append(d, "wait", "--timeout", "200ms", "--interval", "50ms")...)
	if res.code != 1 || !strings.HasSuffix(res.stderr, "queuemax wait: timed out after 200ms: 1 job left (1 pending, 0 scheduled, 0 running)\n") ||
		!strings.Contains(res.stderr, "0/1 done; 1 pending, 0 scheduled, 0 running") {
		t.Errorf("wait --timeout: exit %d, stderr:\n%s", res.code, res.stderr)
	}
}

func TestPeriodic(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 0)
	res := ok(t, qm(t, "--data-dir", dir, "periodic"), "periodic")
	if !strings.HasPrefix(res.stdout, "no periodic tasks registered") {
		t.Errorf("periodic without registry: %q", res.stdout)
	}
	res = ok(t, tk(t, "--data-dir", dir, "periodic"), "tasks periodic")
	if !strings.Contains(res.stdout, "tasks.CleanupOldData  @every 1h0m0s  not registered yet") {
		t.Errorf("periodic with registry:\n%s", res.stdout)
	}
}

// lines collects a running process's output lines.
type lines struct {
	mu    sync.Mutex
	all   []string
	added chan struct{} // signalled (without blocking) on every line
	done  chan struct{} // closed at EOF
}

func collect(r io.Reader) *lines {
	l := &lines{added: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l.mu.Lock()
			l.all = append(l.all, sc.Text())
			l.mu.Unlock()
			select {
			case l.added <- struct{}{}:
			default:
			}
		}
	}()
	return l
}

func (l *lines) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

// waitFor blocks until a line contains s.
func (l *lines) waitFor(t *testing.T, s string) {
	t.Helper()
	for !strings.Contains(l.text(), s) {
		select {
		case <-l.added:
		case <-l.done:
			t.Fatalf("output ended without %q:\n%s", s, l.text())
		case <-t.Context().Done():
			t.Fatalf("no %q in output:\n%s", s, l.text())
		}
	}
}

func TestWorker(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 0)
	d := []string{"--data-dir", dir}
	jobs := filepath.Join(t.TempDir(), "jobs.jsonl")
	var recs []string
	for i := range 40 {
		recs = append(recs, fmt.Sprintf(`{"task":"%sSendEmail","payload":{"to":"u%d@example.com","subject":"Hi"}}`, taskPrefix, i))
	}
	for i := range 10 {
		recs = append(recs, fmt.Sprintf(`{"task":"%sGenerateReport","payload":{"user_id":%d,"month":"2026-10"}}`, taskPrefix, i))
	}
	if err := os.WriteFile(jobs, []byte(strings.Join(recs, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	ok(t, tk(t, append(d, "enqueue", "--file", jobs)...), "enqueue --file")
	ok(t, tk(t, append(d, "enqueue", "--task", "SendEmail", "--payload", `{"to":"not-an-address","subject":"x"}`)...), "enqueue bad address")

	// Not PingMonitor, which runs every 2s and would add to the counts.
	cmd := exec.CommandContext(t.Context(), tasksBin, append(d, "worker", "--tasks", "SendEmail,GenerateReport",
		"--tasks", "CleanupOldData", "--workers", "2", "--concurrency", "4", "--interval", "50ms")...)
	cmd.Env = cleanEnv()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := collect(stdout)

	// Poll stats until every job has run.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		s := getStats(t, dir)
		if s.Pending+s.Scheduled+s.Processing == 0 && s.TotalProcessed+s.TotalFailed == 51 {
			break
		}
		select {
		case <-tick.C:
		case <-out.done:
			t.Fatalf("worker exited early:\n%s\n%s", out.text(), stderr.String())
		case <-t.Context().Done():
			t.Fatalf("jobs not done: %+v\n%s", s, out.text())
		}
	}
	out.waitFor(t, "processed 50  failed 1") // the live line caught up
	ok(t, qm(t, append(d, "wait", "--timeout", "10s")...), "wait")

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-out.done
	if err := cmd.Wait(); err != nil {
		t.Fatalf("worker after SIGTERM: %v\nstdout:\n%s\nstderr:\n%s", err, out.text(), stderr.String())
	}
	text := out.text()
	for _, w := range []string{
		"worker: 3 tasks, 2 engines × 4 job slots",
		"tasks.CleanupOldData (@every 1h0m0s)",
		"jobs/s",
		"draining: waiting up to 30s for 0 running jobs",
		"stopped after ",
		": processed 50, failed 1, retried 0",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("worker output lacks %q:\n%s", w, text)
		}
	}
	// The log (level WARNING) holds only the bad address's dead-lettering.
	for line := range strings.Lines(stderr.String()) {
		if !strings.Contains(line, `msg="job dead-lettered"`) || !strings.Contains(line, "not-an-address") {
			t.Errorf("worker logged %q", line)
		}
	}
	s := getStats(t, dir)
	// Every completed job is kept for the completed-job retention (1h).
	if s.Processing != 0 || s.Completed != 50 || s.Failed != 1 || s.DeadLetters != 1 || s.TotalProcessed != 50 {
		t.Errorf("after the worker: %+v", s)
	}
	var periodic []struct {
		Task       string     `json:"task"`
		Registered bool       `json:"registered"`
		NextRun    *time.Time `json:"next_run"`
	}
	res := ok(t, qm(t, append(d, "periodic", "--json")...), "periodic --json")
	if err := json.Unmarshal([]byte(res.stdout), &periodic); err != nil || len(periodic) != 1 ||
		periodic[0].Task != taskPrefix+"CleanupOldData" || !periodic[0].Registered || periodic[0].NextRun == nil {
		t.Errorf("periodic --json after a worker ran = %s (%v)", res.stdout, err)
	}
	res = ok(t, qm(t, append(d, "periodic")...), "periodic")
	if !strings.Contains(res.stdout, "tasks.CleanupOldData  @every 1h0m0s  ") || !strings.Contains(res.stdout, "(in 59m") {
		t.Errorf("periodic after a worker ran:\n%s", res.stdout)
	}
}

// TestWorkerCreate starts a worker on a new data dir and stops it with
// SIGINT before any job exists.
func TestWorkerCreate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "new")
	cmd := exec.CommandContext(t.Context(), tasksBin, "--data-dir", dir, "worker", "--create", "--tasks", "SendEmail,tasks.GenerateReport")
	cmd.Env = cleanEnv()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := collect(stdout)
	out.waitFor(t, "drains and stops")
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-out.done
	if err := cmd.Wait(); err != nil {
		t.Fatalf("worker after SIGINT: %v\n%s", err, out.text())
	}
	if text := out.text(); !strings.Contains(text, "worker: 2 tasks, 1 engine × 10 job slots") || !strings.Contains(text, "processed 0, failed 0") {
		t.Errorf("worker output:\n%s", text)
	}
	if s := getStats(t, dir); s.NumShards != 6 {
		t.Errorf("worker --create made %d shards, want 6", s.NumShards)
	}
}
