package queuemax

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestGoDoc_AliasesPointToTheirDocs checks, with go doc, that every type the
// root package aliases from another package names where its fields and
// methods are documented, and that go doc on that target lists them.
func TestGoDoc_AliasesPointToTheirDocs(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		if goBin, err = exec.LookPath(filepath.Join(runtime.GOROOT(), "bin", "go")); err != nil {
			t.Skip("no go command to run go doc")
		}
	}
	goDoc := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(t.Context(), goBin, append([]string{"doc"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("go doc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	const mod = "github.com/queuemax/queuemax"
	cases := []struct {
		alias, target string
		want          []string
	}{
		{"Job", "queuemaxtype.Job", []string{"Attempts", "MaxAttempts", "func (j *Job) CanRetry() bool"}},
		{"JobID", "queuemaxtype.JobID", []string{"func (id JobID) Shard() int", "func ParseJobID"}},
		{"Status", "queuemaxtype.Status", []string{"StatusScheduled", "func ParseStatus"}},
		{"Priority", "queuemaxtype.Priority", []string{"PriorityHigh", "func (p Priority) Valid() bool"}},
		{"DeadLetter", "queuemaxtype.DeadLetter", []string{"OriginalJobID", "FailedAt"}},
		{"ShardStats", "queuemaxtype.ShardStats", []string{"TotalProcessed", "Healthy"}},
		{"JobCount", "queuemaxtype.JobCount", []string{"Task", "Count"}},
		{"CleanupResult", "queuemaxtype.CleanupResult", []string{"Jobs", "DeadLetters"}},
		{"RecoverResult", "queuemaxtype.RecoverResult", []string{"Requeued", "DeadLettered"}},
		{"CircuitBreaker", "runtime/breaker.Breaker", []string{"func (b *Breaker) Allow() (Ticket, bool)", "func (b *Breaker) Call(", "func (b *Breaker) Stats() Stats"}},
		{"CircuitBreakerConfig", "runtime/breaker.Config", []string{"Threshold", "Timeout", "OnStateChange", "IsFailure"}},
		{"CircuitState", "runtime/breaker.State", []string{"HalfOpen", "func (s State) String() string"}},
		{"CircuitOpenError", "runtime/breaker.OpenError", []string{"RetryIn", "Failures", "func (e *OpenError) Unwrap() error"}},
		{"RateLimiter", "runtime/ratelimit.Limiter", []string{"func (l *Limiter) Acquire(ctx context.Context) error", "func (l *Limiter) TryAcquire() bool", "func (l *Limiter) Update(limit int) error"}},
		{"RateLimiterStats", "runtime/ratelimit.Stats", []string{"Tokens", "Granted", "TotalWait"}},
		{"Autoscale", "runtime/scale.Policy", []string{"UpThreshold", "Cooldown", "func (p Policy) WithDefaults() Policy"}},
		{"PermanentError", "queuemaxtype.PermanentError", []string{"func (e *PermanentError) Unwrap() error"}},
		{"SnoozeError", "queuemaxtype.SnoozeError", []string{"Delay", "func (e *SnoozeError) Error() string"}},
		{"FailOutcome", "queuemaxtype.FailOutcome", []string{"Dead", "Snoozed", "RetryAt", "Decision"}},
		{"Decision", "queuemaxtype.Decision", []string{"Permanent", "Delay", "Reason"}},
		{"Hooks", "queuemaxtype.Hooks", []string{"OnStart", "OnComplete", "OnError"}},
		{"WorkMiddleware", "queuemaxtype.WorkMiddleware", []string{"Work(ctx context.Context, job *Job, next"}},
		{"InsertJob", "queuemaxtype.InsertJob", []string{"MaxAttempts", "func (j *InsertJob) SetMetadata(key string, value any) error"}},
		{"UniqueOpts", "queuemaxtype.UniqueOpts", []string{"ByArgs", "ByState", "func (u UniqueOpts) IsZero() bool"}},
		{"PayloadError", "runtime/enqueue.PayloadError", []string{"Reason", "func (e *PayloadError) Unwrap() error"}},
		{"Event", "queuemaxtype.Event", []string{"Kind", "RetryAt", "Slot"}},
		{"EventKind", "queuemaxtype.EventKind", []string{"EventSnoozed", "EventQueueResumed"}},
	}
	for _, tc := range cases {
		t.Run(tc.alias, func(t *testing.T) {
			t.Parallel()
			root := strings.Join(strings.Fields(goDoc(t, mod+"."+tc.alias)), " ") // undo wrapping
			if !strings.Contains(root, "go doc "+mod+"/"+tc.target) && !strings.Contains(root, "see "+tc.target) {
				t.Errorf("go doc queuemax.%s does not point to %s:\n%s", tc.alias, tc.target, root)
			}
			out := goDoc(t, "-all", mod+"/"+tc.target)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("go doc %s lacks %q:\n%s", tc.target, w, out)
				}
			}
		})
	}
	// The package doc sends readers to queuemaxtype.
	if pkg := goDoc(t, mod); !strings.Contains(pkg, "queuemaxtype") {
		t.Errorf("go doc %s does not mention queuemaxtype:\n%s", mod, pkg)
	}
}
