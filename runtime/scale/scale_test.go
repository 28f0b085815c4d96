package scale

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPolicy_WithDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   Policy
		want Policy
	}{
		{
			name: "Zero",
			in:   Policy{},
			want: Policy{Min: 1, Max: 10, UpThreshold: 100, DownThreshold: 10, CheckInterval: time.Minute, Cooldown: 30 * time.Second},
		},
		{
			name: "Explicit",
			in:   Policy{Min: 2, Max: 4, UpThreshold: 50, DownThreshold: 5, CheckInterval: time.Second, Cooldown: 3 * time.Second},
			want: Policy{Min: 2, Max: 4, UpThreshold: 50, DownThreshold: 5, CheckInterval: time.Second, Cooldown: 3 * time.Second},
		},
		{
			name: "MaxFollowsLargeMin",
			in:   Policy{Min: 20},
			want: Policy{Min: 20, Max: 20, UpThreshold: 100, DownThreshold: 10, CheckInterval: time.Minute, Cooldown: 30 * time.Second},
		},
		{
			name: "DownFollowsSmallUp",
			in:   Policy{UpThreshold: 4},
			want: Policy{Min: 1, Max: 10, UpThreshold: 4, DownThreshold: 4, CheckInterval: time.Minute, Cooldown: 30 * time.Second},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, tt.in.WithDefaults()); diff != "" {
				t.Errorf("%+v.WithDefaults() mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestPolicy_Validate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		p       Policy
		wantErr string // field named in the error; empty means valid
	}{
		{name: "Zero", p: Policy{}},
		{name: "MinEqualsMax", p: Policy{Min: 3, Max: 3}},
		{name: "DownEqualsUp", p: Policy{UpThreshold: 10, DownThreshold: 10}},
		{name: "NegativeMin", p: Policy{Min: -1}, wantErr: "Min"},
		{name: "NegativeMax", p: Policy{Max: -1}, wantErr: "Max"},
		{name: "MaxBelowMin", p: Policy{Min: 5, Max: 4}, wantErr: "Max (4) must not be less than Min (5)"},
		{name: "NegativeUp", p: Policy{UpThreshold: -1}, wantErr: "UpThreshold"},
		{name: "NegativeDown", p: Policy{DownThreshold: -1}, wantErr: "DownThreshold"},
		{name: "DownAboveUp", p: Policy{UpThreshold: 10, DownThreshold: 11}, wantErr: "DownThreshold (11) must not exceed UpThreshold (10)"},
		{name: "NegativeCheckInterval", p: Policy{CheckInterval: -time.Second}, wantErr: "CheckInterval"},
		{name: "NegativeCooldown", p: Policy{Cooldown: -time.Second}, wantErr: "Cooldown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.p.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("%+v.Validate() error = %v, want nil", tt.p, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("%+v.Validate() error = %v, want one containing %q", tt.p, err, tt.wantErr)
			}
		})
	}
}

func TestPolicy_Target(t *testing.T) {
	t.Parallel()
	def := Policy{} // Min 1, Max 10, Up 100, Down 10, Cooldown 30s
	tests := []struct {
		name      string
		p         Policy
		current   int
		pending   int64
		since     time.Duration
		hadAction bool
		want      int
	}{
		// Scaling up: proportional, at least one, capped at Max.
		{name: "UpByOne", p: def, current: 1, pending: 101, want: 2},
		{name: "UpProportional", p: def, current: 2, pending: 350, want: 5},
		{name: "UpCappedAtMax", p: def, current: 5, pending: 10_000, want: 10},
		{name: "UpHugeBacklogNoOverflow", p: def, current: 5, pending: math.MaxInt64, want: 10},
		{name: "AtUpThresholdKeeps", p: def, current: 3, pending: 100, want: 3},
		{name: "AtMaxKeeps", p: def, current: 10, pending: 5000, want: 10},
		// Scaling down: by one, not below Min.
		{name: "DownByOne", p: def, current: 5, pending: 9, want: 4},
		{name: "DownEmptyQueue", p: def, current: 2, pending: 0, want: 1},
		{name: "AtMinKeeps", p: def, current: 1, pending: 0, want: 1},
		{name: "AtDownThresholdKeeps", p: def, current: 5, pending: 10, want: 5},
		{name: "BetweenThresholdsKeeps", p: def, current: 5, pending: 50, want: 5},
		// Cooldown.
		{name: "CooldownSkipsUp", p: def, current: 2, pending: 1000, since: 29 * time.Second, hadAction: true, want: 2},
		{name: "CooldownSkipsDown", p: def, current: 2, pending: 0, since: time.Second, hadAction: true, want: 2},
		{name: "CooldownOver", p: def, current: 2, pending: 1000, since: 30 * time.Second, hadAction: true, want: 10},
		{name: "NoActionYetNoCooldown", p: def, current: 2, pending: 1000, since: 0, hadAction: false, want: 10},
		// Clamping into [Min, Max] (queue-max never enforced Min).
		{name: "BelowMinGrows", p: Policy{Min: 3, Max: 6}, current: 0, pending: 50, want: 3},
		{name: "BelowMinGrowsDuringCooldown", p: Policy{Min: 3, Max: 6}, current: 1, pending: 0, since: time.Second, hadAction: true, want: 3},
		{name: "BelowMinGrowsThenScalesUp", p: Policy{Min: 3, Max: 6}, current: 1, pending: 250, want: 5},
		{name: "AboveMaxShrinks", p: Policy{Min: 1, Max: 4}, current: 9, pending: 50, want: 4},
		{name: "AboveMaxShrinksThenDown", p: Policy{Min: 1, Max: 4}, current: 9, pending: 0, want: 3},
		// Custom thresholds.
		{name: "CustomUp", p: Policy{Max: 50, UpThreshold: 10}, current: 4, pending: 95, want: 13},
		{name: "CustomDown", p: Policy{Min: 2, DownThreshold: 3}, current: 4, pending: 2, want: 3},
		{name: "CustomCooldown", p: Policy{Cooldown: 5 * time.Second}, current: 4, pending: 0, since: 5 * time.Second, hadAction: true, want: 3},
		{name: "NegativePendingCountsAsEmpty", p: def, current: 4, pending: -1, want: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.p.Target(tt.current, tt.pending, tt.since, tt.hadAction); got != tt.want {
				t.Errorf("%+v.Target(%d, %d, %v, %v) = %d, want %d",
					tt.p, tt.current, tt.pending, tt.since, tt.hadAction, got, tt.want)
			}
		})
	}
}

// TestPolicy_TargetSimulation drives the policy the way the pool does,
// through a backlog that rises and drains, and checks the pool's size after
// each check.
func TestPolicy_TargetSimulation(t *testing.T) {
	t.Parallel()
	p := Policy{Min: 1, Max: 8, CheckInterval: 10 * time.Second, Cooldown: 20 * time.Second}
	backlog := []int64{0, 150, 450, 900, 900, 900, 500, 50, 5, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	var (
		got        []int
		size       = 0 // the pool starts empty: Min must still be honoured
		lastAction time.Duration
		hadAction  bool
	)
	for i, pending := range backlog {
		now := time.Duration(i) * p.CheckInterval
		next := p.Target(size, pending, now-lastAction, hadAction)
		if next != size {
			size, lastAction, hadAction = next, now, true
		}
		got = append(got, size)
	}
	want := []int{1, 1, 5, 5, 8, 8, 8, 8, 7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pool sizes mismatch (-want +got):\n%s", diff)
	}
}
