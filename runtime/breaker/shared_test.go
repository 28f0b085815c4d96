package breaker

import (
	"strings"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func TestApply(t *testing.T) {
	pol := Policy{Threshold: 3, Timeout: time.Minute, ProbeTTL: 30 * time.Second}
	r := store.BreakerRow{Task: "t"}
	// Closed: failures count up, a success zeroes them; the threshold opens.
	Apply(&r, Outcomes{Failures: 2, LastError: "timeout"}, pol, t0)
	if r.State != store.BreakerClosed || r.Failures != 2 {
		t.Fatalf("after 2 failures: %+v", r)
	}
	if !Apply(&r, Outcomes{Success: true}, pol, t0) || r.Failures != 0 {
		t.Fatalf("after a success: %+v, want 0 failures", r)
	}
	if Apply(&r, Outcomes{Success: true}, pol, t0) {
		t.Error("a success on a healthy breaker reported a change")
	}
	// A batch: a success, then the failures after it.
	Apply(&r, Outcomes{Failures: 1}, pol, t0)
	Apply(&r, Outcomes{Success: true, Failures: 3, LastError: "503"}, pol, t0)
	if r.State != store.BreakerOpen || r.Failures != 3 || !r.Until.Equal(t0.Add(time.Minute)) || r.LastError != "503" {
		t.Fatalf("after success+3 failures: %+v, want open until t0+1m", r)
	}
	// Late failures while open count but keep Until; a late success
	// does not close it.
	Apply(&r, Outcomes{Failures: 2}, pol, t0.Add(30*time.Second))
	Apply(&r, Outcomes{Success: true}, pol, t0.Add(31*time.Second))
	if r.State != store.BreakerOpen || !r.Until.Equal(t0.Add(time.Minute)) || r.Failures != 5 {
		t.Fatalf("after late outcomes: %+v, want still open until t0+1m with 5 failures", r)
	}
	if g, d := Check(r, t0.Add(50*time.Second)); g != GateHold || d != 10*time.Second {
		t.Errorf("Check while open = %v, %v; want hold for 10s", g, d)
	}
	if !TakeProbe(&r, "a", pol, t0.Add(time.Minute)) || r.State != store.BreakerHalfOpen {
		t.Fatalf("TakeProbe after the open period: %+v", r)
	}
	// A failure of the probe (anyone's counted failure) opens it again.
	Apply(&r, Outcomes{Owner: "a", ProbeDone: true, Failures: 1}, pol, t0.Add(70*time.Second))
	if r.State != store.BreakerOpen || r.ProbeOwner != "" || !r.Until.Equal(t0.Add(130*time.Second)) {
		t.Fatalf("after a failed probe: %+v, want open for another minute", r)
	}
	// A release by someone who does not hold the probe changes nothing.
	TakeProbe(&r, "a", pol, t0.Add(130*time.Second))
	if Apply(&r, Outcomes{Owner: "b", ProbeDone: true}, pol, t0.Add(131*time.Second)) || r.ProbeOwner != "a" {
		t.Errorf("b released a's probe: %+v", r)
	}
}

func TestHeld(t *testing.T) {
	r := store.BreakerRow{Task: "shop.Charge", State: store.BreakerOpen, Failures: 5, Until: t0.Add(3*time.Minute + 4*time.Second), LastError: "503"}
	if got, want := Held(r, t0), "circuit breaker of task shop.Charge is open until 12:03:04Z after 5 dependency failures (last: 503)"; got != want {
		t.Errorf("Held = %q, want %q", got, want)
	}
	r.State = store.BreakerHalfOpen
	if got := Held(r, t0); !strings.Contains(got, "half-open") {
		t.Errorf("Held(half-open) = %q", got)
	}
	if got := Held(store.BreakerRow{Task: "t"}, t0); got != "" {
		t.Errorf("Held(closed) = %q, want empty", got)
	}
}
