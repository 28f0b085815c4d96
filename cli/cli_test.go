package cli_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/queuemax/queuemax"
)

// The binaries under test, built once by TestMain.
var (
	queuemaxBin string // cmd/queuemax: no task registry
	tasksBin    string // examples/tasks/cmd/tasks: the example registry
)

const taskPrefix = "tasks."

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
	// cmd/queuemax is a module of its own (it pulls in Prometheus for the
	// dashboard's /metrics): build it from its directory.
	for out, pkg := range map[string][2]string{
		queuemaxBin: {"../cmd/queuemax", "."},
		tasksBin:    {".", "github.com/queuemax/queuemax/examples/tasks/cmd/tasks"},
	} {
		// Not -race: a race-enabled binary takes about a second to start.
		// The in-process tests cover the package under the race detector.
		cmd := exec.Command(goBin, "build", "-C", pkg[0], "-o", out, pkg[1])
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
	c, err := queuemax.Open(t.Context(), queuemax.Config{Dir: dir, Shards: shards, AllowUnknownTasks: true,
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
	// The second signal: what the command does (cli/signal_test.go proves it).
	if help := strings.Join(strings.Fields(res.stdout), " "); !strings.Contains(help, "A second signal during the drain stops at once: the running jobs are cancelled and released to pending without spending an attempt") ||
		strings.Contains(help, "recovered as orphans") {
		t.Errorf("tasks worker --help misstates the second signal:\n%s", res.stdout)
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
		{"DLQRequeueFilterAndID", queuemaxBin, append(d, "dlq", "requeue", "--task", "x", "1:1"), []string{"cannot be combined with a dead letter SHARD:DLQID"}},
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
		{"RetryBadID", queuemaxBin, append(d, "retry", "abc"), []string{`job ID "abc"`}},
		{"RetryIDShardMismatch", queuemaxBin, append(d, "retry", "2:5", "--shard", "1"), []string{"is in shard 2, not --shard 1"}},
		{"DLQRequeueNoID", queuemaxBin, append(d, "dlq", "requeue", "--shard", "1"), []string{"needs a dead letter SHARD:DLQID, or --all, --task or --error"}},
		{"DLQRequeueBadID", queuemaxBin, append(d, "dlq", "requeue", "7"), []string{`dead letter "7": want SHARD:DLQID`}},
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
