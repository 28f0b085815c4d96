package queuemaxtype_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestGoDoc_ShowsFieldsAndMethods runs go doc on every type of the package
// and checks that its fields, methods, constants and constructors are
// listed: the root package only aliases these types, so this package is
// where users read them.
func TestGoDoc_ShowsFieldsAndMethods(t *testing.T) {
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
	const pkg = "github.com/queuemax/queuemax/queuemaxtype."
	cases := map[string][]string{
		"Job": {"Attempts", "MaxAttempts", "Payload", "Status", "Metadata", "NextRetryAt",
			"func (j *Job) CanRetry() bool", "func (j *Job) RemainingRetries() int", "func (j *Job) IsTerminal() bool",
			"func (j *Job) ProcessingTime() (time.Duration, bool)", "func (j *Job) QueueWait() time.Duration", "CanRetry reports whether"},
		"JobID": {"type JobID int64", "func NewJobID(shard int, seq int64) JobID", "func ParseJobID(s string) (JobID, error)",
			"func (id JobID) Shard() int", "func (id JobID) Seq() int64", "func (id JobID) String() string"},
		"Status": {"type Status string", "StatusPending", "StatusScheduled", "StatusProcessing", "StatusCompleted",
			"StatusFailed", "StatusCancelled", "func ParseStatus(s string) (Status, error)"},
		"Statuses":      {"var Statuses = []Status{"},
		"Priority":      {"type Priority int", "PriorityLow", "PriorityMedium", "PriorityHigh", "func (p Priority) Valid() bool", "func (p Priority) String() string"},
		"DeadLetter":    {"OriginalJobID", "FailedAt", "ErrorType", "Attempts"},
		"ShardStats":    {"Pending", "Scheduled", "DeadLetters", "TotalProcessed", "OldestPending", "Healthy", "LastError"},
		"JobCount":      {"Shard", "Task", "Status", "Count", "func (c JobCount) IsDeadLetters() bool"},
		"CleanupResult": {"Jobs", "DeadLetters"},
		"RecoverResult": {"Requeued", "DeadLettered"},
		"JobStep":       {"Name", "Done", "Result", "Cursor", "UpdatedAt"},
		"UniqueOpts":    {"ByArgs", "ByKey", "ByPeriod", "ByState", "func (u UniqueOpts) IsZero() bool"},
		// The types the engine and users share.
		"PermanentError":        {"func (e *PermanentError) Unwrap() error"},
		"RetryAfterError":       {"Delay", "func (e *RetryAfterError) Unwrap() error"},
		"CancelError":           {"func (e *CancelError) Unwrap() error"},
		"SnoozeError":           {"Delay", "func (e *SnoozeError) Error() string"},
		"SnoozeLimitError":      {"Snoozes, Max int"},
		"PanicError":            {"Value", "Stack"},
		"TimeoutError":          {"Limit", "func (e *TimeoutError) Timeout() bool"},
		"UnavailableError":      {"Err", "func (e *UnavailableError) DependencyFailure() bool", "func (e *UnavailableError) Unwrap() error"},
		"Decision":              {"Permanent", "Delay", "Reason"},
		"FailOutcome":           {"Dead", "Cancelled", "Snoozed", "RetryAt", "Decision"},
		"JobMiddleware":         {"type JobMiddleware any"},
		"EnqueueMiddleware":     {"InsertMany(ctx context.Context, jobs []*InsertJob"},
		"WorkMiddleware":        {"Work(ctx context.Context, job *Job, next"},
		"EnqueueMiddlewareFunc": {"func (f EnqueueMiddlewareFunc) InsertMany("},
		"WorkMiddlewareFunc":    {"func (f WorkMiddlewareFunc) Work("},
		"InsertJob":             {"MaxAttempts", "Metadata", "func (j *InsertJob) SetMetadata(key string, value any) error"},
		"Hooks":                 {"OnStart", "OnComplete", "OnError"},
		"Event":                 {"Kind", "JobID", "RetryAt", "AlertType", "Slot", "Queue"},
		"EventKind":             {"EventEnqueued", "EventSnoozed", "EventQueueResumed"},
		"WorkerInfo":            {"Host", "Concurrency", "Breakers", "RateLimits", "Schemas", "func (w WorkerInfo) Handles(task string) bool"},
		"RateLimitInfo":         {"Limit", "Per", "Tokens", "Denied"},
		"TaskInfo":              {"Pending", "Scheduled", "Workers"},
		"GlobalLimitInfo":       {"Scope", "Concurrency", "Slots", "Keys", "func (g GlobalLimitInfo) String() string"},
		"CircuitBreakerInfo":    {"State", "Failures", "OpenUntil", "ProbeOwner", "Held"},
		"WorkerState":           {"type WorkerState string", "WorkerIdle", "WorkerRunning", "WorkerStopping", "WorkerStopped"},
		"WorkerStats":           {"WorkerID", "State", "Prefetched", "LeaseLost", "UptimeSeconds", "ThroughputPerHour", "CurrentJobs"},
		"HealthStatus":          {"type HealthStatus string", "HealthOK", "HealthDegraded", "HealthUnhealthy"},
		"Health":                {"Status", "Problems", "Degraded", "Workers", "CheckedAt"},
		"DegradedTask":          {"Task", "Breaker", "OpenUntil", "LastError"},
		"PeriodicInfo":          {"Task", "Schedule", "Misfire", "NextRun", "LastRun", "LastJobID", "LastOutcome"},
		"WorkflowID":            {"type WorkflowID int64", "func NewWorkflowID(shard int, seq int64) WorkflowID", "func ParseWorkflowID(s string) (WorkflowID, error)", "func (id WorkflowID) Shard() int"},
		"WorkflowStatus":        {"type WorkflowStatus string", "WorkflowRunning", "WorkflowCompleted", "WorkflowFailed", "WorkflowCancelled"},
		"WorkflowInfo":          {"ID", "Name", "Status", "CreatedAt", "FinishedAt", "Steps"},
		"WorkflowStep":          {"JobID", "Status", "After", "AfterSettled", "Binds", "Reason"},
		"StepBinding":           {"Param", "From"},
		"WorkflowCounts":        {"Running", "Completed", "Failed", "Cancelled"},
		"CatalogTask":           {"Name", "Aliases", "Schema", "Priority", "MaxRetries", "Queue", "UpdatedAt"},
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out := goDoc(t, "-all", pkg+name)
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Errorf("go doc %s%s lacks %q:\n%s", pkg, name, w, out)
				}
			}
		})
	}
	// Every type of the package is checked above.
	t.Run("all types listed", func(t *testing.T) {
		t.Parallel()
		for line := range strings.Lines(goDoc(t, "-short", strings.TrimSuffix(pkg, "."))) {
			if name, ok := strings.CutPrefix(line, "type "); ok {
				name, _, _ = strings.Cut(name, " ")
				if _, ok := cases[name]; !ok {
					t.Errorf("type %s has no go doc check here", name)
				}
			}
		}
	})
	// The root package's alias sends readers here.
	t.Run("root", func(t *testing.T) {
		t.Parallel()
		for name := range cases {
			if name == "Statuses" {
				continue // not re-exported
			}
			out := goDoc(t, "github.com/queuemax/queuemax."+name)
			if want := "queuemaxtype." + name; !strings.Contains(out, want) {
				t.Errorf("go doc queuemax.%s does not point to %s:\n%s", name, want, out)
			}
		}
	})
}
