package schedule

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
)

// inserter builds each slot's job as a client would and fires it.
type inserter struct{ fired []time.Time }

func (in *inserter) InsertPeriodic(ctx context.Context, task string, now time.Time, fire func(context.Context, store.InsertParams) (store.JobID, error)) error {
	id, err := fire(ctx, store.InsertParams{Task: task, Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: now})
	if err == nil && id != 0 {
		in.fired = append(in.fired, now)
	}
	return err
}

// TestScheduler_TickFiresEachSlotOnce: a slot fires once however often
// it is ticked; a slot missed by more than the grace is skipped (the
// default policy), one within it fires late.
func TestScheduler_TickFiresEachSlotOnce(t *testing.T) {
	t.Parallel()
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Options{Dir: t.TempDir(), Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	in := &inserter{}
	s, err := New(Config{Store: st, Entries: []Entry{{Task: "t.Every", Every: time.Minute}}, Insert: in})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	ctx := t.Context()
	if err := s.Register(ctx, t0); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{30 * time.Second, time.Minute, time.Minute, time.Minute + 10*time.Second,
		3*time.Minute + 10*time.Second, 5*time.Minute + 40*time.Second} {
		if _, err := s.Tick(ctx, t0.Add(at)); err != nil {
			t.Fatalf("Tick(+%v): %v", at, err)
		}
	}
	// 10:01 on time; 10:03 10s late (within the 30s grace; 10:02 is
	// never fired); 10:05 40s late: skipped.
	want := []time.Time{t0.Add(time.Minute), t0.Add(3*time.Minute + 10*time.Second)}
	if len(in.fired) != len(want) || !in.fired[0].Equal(want[0]) || !in.fired[1].Equal(want[1]) {
		t.Errorf("fired at %v; want %v", in.fired, want)
	}
	states, err := st.PeriodicList(ctx)
	if err != nil || len(states) != 1 || !states[0].NextRun.Equal(t0.Add(6*time.Minute)) {
		t.Errorf("stored %+v, %v; want the next run at 10:06", states, err)
	}
}

// TestNew_BadEntries: a schedule that is neither or both of Every and
// Cron, a bad cron spec and an unknown misfire policy are refused.
func TestNew_BadEntries(t *testing.T) {
	t.Parallel()
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Options{Dir: t.TempDir(), Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, e := range []Entry{
		{Task: "neither"},
		{Task: "both", Every: time.Minute, Cron: "* * * * *"},
		{Task: "negative", Every: -time.Minute},
		{Task: "badcron", Cron: "61 * * * *"},
		{Task: "misfire", Every: time.Minute, Misfire: "later"},
	} {
		if _, err := New(Config{Store: st, Entries: []Entry{e}, Insert: &inserter{}}); err == nil {
			t.Errorf("New(%+v) = nil error; want it refused", e)
		}
	}
}

// TestScheduler_MisfirePolicies: after three days down, skip fires none
// of the missed 3am slots and catch_up fires one; both move the next run
// to the next 3am.
func TestScheduler_MisfirePolicies(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		policy string
		want   int
	}{{MisfireSkip, 0}, {MisfireCatchUp, 1}} {
		t.Run(tt.policy, func(t *testing.T) {
			t.Parallel()
			st, err := sqlitestore.Open(t.Context(), sqlitestore.Options{Dir: t.TempDir(), Shards: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			in := &inserter{}
			s, err := New(Config{Store: st, Entries: []Entry{{Task: "t.Nightly", Cron: "0 3 * * *", Misfire: tt.policy}}, Insert: in})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Register(t.Context(), t0.Add(-time.Hour)); err != nil { // next run: 03:00 today
				t.Fatal(err)
			}
			// Down for three days: the 3am slots of days 1–3 were missed.
			next, err := s.Tick(t.Context(), t0.Add(3*24*time.Hour+5*time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if len(in.fired) != tt.want {
				t.Errorf("jobs after downtime = %d, want %d", len(in.fired), tt.want)
			}
			if want := t0.Add(4 * 24 * time.Hour); next.After(want) {
				t.Errorf("next = %v, want at most %v", next, want)
			}
			states, err := st.PeriodicList(t.Context())
			if err != nil || len(states) != 1 || !states[0].NextRun.Equal(t0.Add(4*24*time.Hour)) {
				t.Errorf("stored %+v, %v; want the next run at the next 3am", states, err)
			}
		})
	}
}
