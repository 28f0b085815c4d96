package breaker

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// recorder collects state-change notifications.
type recorder struct {
	mu  sync.Mutex
	got []string
}

func (r *recorder) record(from, to State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, from.String()+"->"+to.String())
}

func (r *recorder) transitions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

func mustNew(t *testing.T, cfg Config) *Breaker {
	t.Helper()
	b, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v) error = %v", cfg, err)
	}
	return b
}

func TestState_String(t *testing.T) {
	t.Parallel()
	got := []string{Closed.String(), Open.String(), HalfOpen.String(), State(9).String()}
	want := []string{"closed", "open", "half_open", "State(9)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("State.String() mismatch (-want +got):\n%s", diff)
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     Config
		want    Stats
		wantErr string
	}{
		{name: "Defaults", cfg: Config{}, want: Stats{Threshold: 5, Timeout: time.Minute}},
		{name: "Explicit", cfg: Config{Threshold: 2, Timeout: time.Second}, want: Stats{Threshold: 2, Timeout: time.Second}},
		{name: "NegativeThreshold", cfg: Config{Threshold: -1}, wantErr: "Threshold"},
		{name: "NegativeTimeout", cfg: Config{Timeout: -time.Second}, wantErr: "Timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := New(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("New(%+v) error = %v, want one naming %s", tt.cfg, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%+v) error = %v", tt.cfg, err)
			}
			if diff := cmp.Diff(tt.want, b.Stats()); diff != "" {
				t.Errorf("New(%+v).Stats() mismatch (-want +got):\n%s", tt.cfg, diff)
			}
		})
	}
}

// TestBreaker_StateMachine runs scripts of operations against a breaker with
// Threshold 3 and Timeout 60s in fake time. Each step is one of:
//
//	ok, fail          direct Success / Failure
//	allow, deny       Allow, expecting it to allow (the ticket is kept) or reject
//	t.ok, t.fail,     settle the most recent ticket
//	t.release
//	wait <duration>   advance the fake clock
//	reset             Reset
//
// After each step the state is recorded; the notifications and the final
// Stats are compared too.
func TestBreaker_StateMachine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		steps     []string
		want      []State
		wantNotes []string
		wantStats Stats
	}{
		{
			name:      "ClosedCountsConsecutiveFailures",
			steps:     []string{"fail", "fail", "ok", "fail", "fail", "allow"},
			want:      []State{Closed, Closed, Closed, Closed, Closed, Closed},
			wantStats: Stats{State: Closed, Failures: 2, Threshold: 3, Timeout: time.Minute},
		},
		{
			name:      "OpensAtThreshold",
			steps:     []string{"fail", "fail", "fail", "deny", "wait 10s", "deny"},
			want:      []State{Closed, Closed, Open, Open, Open, Open},
			wantNotes: []string{"closed->open"},
			wantStats: Stats{State: Open, Failures: 3, Threshold: 3, Rejected: 2, Timeout: time.Minute,
				RecoveryRemaining: 50 * time.Second, TotalOpen: 10 * time.Second, StateChanges: 1},
		},
		{
			name:      "HalfOpensAfterTimeoutAndProbeCloses",
			steps:     []string{"fail", "fail", "fail", "wait 60s", "allow", "deny", "t.ok", "allow", "allow"},
			want:      []State{Closed, Closed, Open, Open, HalfOpen, HalfOpen, Closed, Closed, Closed},
			wantNotes: []string{"closed->open", "open->half_open", "half_open->closed"},
			wantStats: Stats{State: Closed, Threshold: 3, Rejected: 1, Timeout: time.Minute, TotalOpen: time.Minute, StateChanges: 3},
		},
		{
			name:      "ProbeFailureReopens",
			steps:     []string{"fail", "fail", "fail", "wait 60s", "allow", "t.fail", "deny", "wait 59s", "deny", "wait 1s", "allow"},
			want:      []State{Closed, Closed, Open, Open, HalfOpen, Open, Open, Open, Open, Open, HalfOpen},
			wantNotes: []string{"closed->open", "open->half_open", "half_open->open", "open->half_open"},
			wantStats: Stats{State: HalfOpen, Failures: 4, Threshold: 3, Rejected: 2, Timeout: time.Minute,
				TotalOpen: 2 * time.Minute, StateChanges: 4, ProbeInFlight: true},
		},
		{
			// The reference's wedge: a probe that found no job must free the slot.
			name:      "ReleasedProbeDoesNotWedge",
			steps:     []string{"fail", "fail", "fail", "wait 60s", "allow", "t.release", "allow", "t.release", "allow", "t.ok"},
			want:      []State{Closed, Closed, Open, Open, HalfOpen, HalfOpen, HalfOpen, HalfOpen, HalfOpen, Closed},
			wantNotes: []string{"closed->open", "open->half_open", "half_open->closed"},
			wantStats: Stats{State: Closed, Threshold: 3, Timeout: time.Minute, TotalOpen: time.Minute, StateChanges: 3},
		},
		{
			name:      "FailuresWhileOpenDoNotExtendRecovery",
			steps:     []string{"fail", "fail", "fail", "wait 30s", "fail", "wait 29s", "fail", "deny", "wait 1s", "allow"},
			want:      []State{Closed, Closed, Open, Open, Open, Open, Open, Open, Open, HalfOpen},
			wantNotes: []string{"closed->open", "open->half_open"},
			wantStats: Stats{State: HalfOpen, Failures: 5, Threshold: 3, Rejected: 1, Timeout: time.Minute,
				TotalOpen: time.Minute, StateChanges: 2, ProbeInFlight: true},
		},
		{
			name:      "SuccessWhileOpenZeroesFailuresButStaysOpen",
			steps:     []string{"fail", "fail", "fail", "ok", "deny"},
			want:      []State{Closed, Closed, Open, Open, Open},
			wantNotes: []string{"closed->open"},
			wantStats: Stats{State: Open, Threshold: 3, Rejected: 1, Timeout: time.Minute,
				RecoveryRemaining: time.Minute, StateChanges: 1},
		},
		{
			name:      "DirectSuccessClosesHalfOpen",
			steps:     []string{"fail", "fail", "fail", "wait 60s", "allow", "ok", "t.fail"},
			want:      []State{Closed, Closed, Open, Open, HalfOpen, Closed, Closed},
			wantNotes: []string{"closed->open", "open->half_open", "half_open->closed"},
			// The stale probe's failure counts as an ordinary failure.
			wantStats: Stats{State: Closed, Failures: 1, Threshold: 3, Timeout: time.Minute, TotalOpen: time.Minute, StateChanges: 3},
		},
		{
			name:      "DirectFailureReopensHalfOpen",
			steps:     []string{"fail", "fail", "fail", "wait 60s", "allow", "fail", "t.release", "deny"},
			want:      []State{Closed, Closed, Open, Open, HalfOpen, Open, Open, Open},
			wantNotes: []string{"closed->open", "open->half_open", "half_open->open"},
			wantStats: Stats{State: Open, Failures: 4, Threshold: 3, Rejected: 1, Timeout: time.Minute,
				RecoveryRemaining: time.Minute, TotalOpen: time.Minute, StateChanges: 3},
		},
		{
			name:      "ClosedTicketsRecordOutcomes",
			steps:     []string{"allow", "t.fail", "allow", "t.fail", "allow", "t.release", "allow", "t.fail", "deny"},
			want:      []State{Closed, Closed, Closed, Closed, Closed, Closed, Closed, Open, Open},
			wantNotes: []string{"closed->open"},
			wantStats: Stats{State: Open, Failures: 3, Threshold: 3, Rejected: 1, Timeout: time.Minute,
				RecoveryRemaining: time.Minute, StateChanges: 1},
		},
		{
			name:      "ResetFromOpen",
			steps:     []string{"fail", "fail", "fail", "deny", "wait 5s", "reset", "allow"},
			want:      []State{Closed, Closed, Open, Open, Open, Closed, Closed},
			wantNotes: []string{"closed->open", "open->closed"},
			wantStats: Stats{State: Closed, Threshold: 3, Timeout: time.Minute, TotalOpen: 5 * time.Second, StateChanges: 2},
		},
		{
			name:      "ResetFreesProbe",
			steps:     []string{"fail", "fail", "fail", "wait 60s", "allow", "reset", "t.release", "fail", "fail", "fail", "wait 60s", "allow", "deny"},
			want:      []State{Closed, Closed, Open, Open, HalfOpen, Closed, Closed, Closed, Closed, Open, Open, HalfOpen, HalfOpen},
			wantNotes: []string{"closed->open", "open->half_open", "half_open->closed", "closed->open", "open->half_open"},
			wantStats: Stats{State: HalfOpen, Failures: 3, Threshold: 3, Rejected: 1, Timeout: time.Minute,
				TotalOpen: 2 * time.Minute, StateChanges: 5, ProbeInFlight: true},
		},
		{
			name:      "ResetWhenClosedIsNoTransition",
			steps:     []string{"fail", "reset"},
			want:      []State{Closed, Closed},
			wantStats: Stats{State: Closed, Threshold: 3, Timeout: time.Minute},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var rec recorder
				b := mustNew(t, Config{Threshold: 3, Timeout: time.Minute, OnStateChange: rec.record})
				var (
					ticket Ticket
					got    []State
				)
				for i, step := range tt.steps {
					switch op, arg, _ := strings.Cut(step, " "); op {
					case "ok":
						b.Success()
					case "fail":
						b.Failure()
					case "allow", "deny":
						tk, ok := b.Allow()
						if want := op == "allow"; ok != want {
							t.Fatalf("step %d (%s): Allow() = %v, want %v", i, step, ok, want)
						}
						if ok {
							ticket = tk
						}
					case "t.ok":
						ticket.Success()
					case "t.fail":
						ticket.Failure()
					case "t.release":
						ticket.Release()
					case "wait":
						d, err := time.ParseDuration(arg)
						if err != nil {
							t.Fatalf("step %d: %v", i, err)
						}
						time.Sleep(d) // fake time
					case "reset":
						b.Reset()
					default:
						t.Fatalf("step %d: unknown op %q", i, step)
					}
					got = append(got, b.State())
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("states after %v mismatch (-want +got):\n%s", tt.steps, diff)
				}
				if diff := cmp.Diff(tt.wantNotes, rec.transitions()); diff != "" {
					t.Errorf("OnStateChange calls mismatch (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.wantStats, b.Stats()); diff != "" {
					t.Errorf("Stats() mismatch (-want +got):\n%s", diff)
				}
			})
		})
	}
}

var (
	errService = errors.New("service down")
	errClient  = errors.New("bad request")
)
