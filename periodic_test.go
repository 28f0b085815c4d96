package queuemax

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/schedule"
)

func periodicHandler(name string, p Periodic) Handler {
	h := Define(name, TaskOptions{}, func(context.Context, struct{}) error { return nil })
	h.Periodic = &p
	return h
}

// slotsFired returns the slots recorded for task, in order.
func slotsFired(t *testing.T, c *Client, task string) []string {
	t.Helper()
	jobs, err := c.Jobs(t.Context(), ListParams{Task: task, Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, j := range jobs {
		out = append(out, j.CreatedAt.Format("15:04:05"))
	}
	return out
}

func newTestScheduler(t *testing.T, c *Client) *schedule.Scheduler {
	t.Helper()
	s, err := c.newScheduler()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestScheduler_FiresEachSlotOnce(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	b := setup(t, Config{Shards: 2, Handlers: []Handler{periodicHandler("t.Every", Periodic{Every: time.Minute})}})
	s := newTestScheduler(t, b.c)
	if err := s.Register(b.ctx, t0); err != nil {
		t.Fatal(err)
	}
	tick := func(at time.Time) time.Time {
		t.Helper()
		next, err := s.Tick(b.ctx, at)
		if err != nil {
			t.Fatalf("tick(%v): %v", at, err)
		}
		return next
	}
	if next := tick(t0.Add(30 * time.Second)); !next.Equal(t0.Add(time.Minute)) {
		t.Errorf("next = %v, want %v", next, t0.Add(time.Minute))
	}
	tick(t0.Add(time.Minute))
	tick(t0.Add(time.Minute)) // again at the same time: nothing new
	tick(t0.Add(time.Minute + 10*time.Second))
	// Late by 10s for the 3-minute slot (within the 30s grace): it fires,
	// the missed 2-minute slot does not.
	tick(t0.Add(3*time.Minute + 10*time.Second))
	got := slotsFired(t, b.c, "t.Every")
	want := []string{"10:03:10", "10:01:00"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("jobs created at %v, want %v", got, want)
	}
	info, err := b.c.PeriodicTasks(b.ctx)
	if err != nil || len(info) != 1 {
		t.Fatalf("PeriodicTasks = %v, %v", info, err)
	}
	if !info[0].LastRun.Equal(t0.Add(3*time.Minute)) || !info[0].NextRun.Equal(t0.Add(4*time.Minute)) ||
		info[0].LastOutcome != "pending" || info[0].Schedule != "@every 1m0s" {
		t.Errorf("PeriodicTasks = %+v", info[0])
	}

	// A restart keeps the stored next run: no slot is repeated or skipped.
	s2 := newTestScheduler(t, b.c)
	if err := s2.Register(b.ctx, t0.Add(3*time.Minute+30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if next, _ := s2.Tick(b.ctx, t0.Add(3*time.Minute+30*time.Second)); !next.Equal(t0.Add(4 * time.Minute)) {
		t.Errorf("after restart next = %v, want %v", next, t0.Add(4*time.Minute))
	}
	s2.Tick(b.ctx, t0.Add(4*time.Minute))
	if got := slotsFired(t, b.c, "t.Every"); len(got) != 3 {
		t.Errorf("after restart jobs = %v, want 3", got)
	}
}

func TestScheduler_BadSchedules(t *testing.T) {
	t.Parallel()
	for _, p := range []Periodic{
		{Cron: "CRON_TZ=Mars/Olympus 0 3 * * *"},
		{Cron: "0 25 * * *"},
		{Every: time.Minute, Cron: "@hourly"},
		{},
		{Every: time.Minute, Misfire: "sometimes"},
	} {
		_, err := Open(t.Context(), Config{Dir: t.TempDir(), Handlers: []Handler{periodicHandler("t.Bad", p)}})
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), `"t.Bad"`) {
			t.Errorf("Open with %+v: error = %v, want ErrInvalidConfig naming t.Bad", p, err)
		}
	}
}

// TestScheduler_ManySchedulersOneSlotEach runs three schedulers in
// goroutines and one in another OS process on one data directory, ticking
// in lockstep through many slots; every slot must be enqueued exactly once.
func TestScheduler_ManySchedulersOneSlotEach(t *testing.T) {
	t.Parallel()
	const ticks = 60
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := periodicHandler("t.Tick", Periodic{Every: time.Minute})
	b := setup(t, Config{Shards: 2, Handlers: []Handler{h}})
	var scheds []*schedule.Scheduler
	for range 3 {
		c := setup(t, Config{Dir: b.dir, Shards: 2, Handlers: []Handler{h}}).c
		s := newTestScheduler(t, c)
		if err := s.Register(b.ctx, t0); err != nil {
			t.Fatal(err)
		}
		scheds = append(scheds, s)
	}
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=sched", childDirEnv+"="+b.dir, childShardEnv+"=2")
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	replies := bufio.NewScanner(stdout)

	for k := 1; k <= ticks; k++ {
		at := t0.Add(time.Duration(k) * time.Minute)
		fmt.Fprintf(stdin, "%d\n", at.UnixNano())
		var wg sync.WaitGroup
		for _, s := range scheds {
			wg.Go(func() {
				if _, err := s.Tick(b.ctx, at); err != nil {
					t.Errorf("tick: %v", err)
				}
			})
		}
		wg.Wait()
		if !replies.Scan() || replies.Text() != "ok" {
			t.Fatalf("child scheduler at tick %d: %q %v", k, replies.Text(), replies.Err())
		}
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	jobs, err := b.c.Jobs(b.ctx, ListParams{Task: "t.Tick", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != ticks {
		t.Errorf("enqueued %d jobs for %d slots, want exactly one each", len(jobs), ticks)
	}
	seen := map[time.Time]int{}
	for _, j := range jobs {
		seen[j.CreatedAt]++
	}
	for k := 1; k <= ticks; k++ {
		at := t0.Add(time.Duration(k) * time.Minute)
		if seen[at] != 1 {
			t.Errorf("slot %v enqueued %d times", at.Format("15:04"), seen[at])
		}
	}
}

// schedChild is the child side of TestScheduler_ManySchedulersOneSlotEach:
// it ticks at each time read from stdin and answers "ok".
func schedChild(dir string, shards int, in io.Reader, say func(string, ...any)) int {
	ctx := context.Background()
	h := periodicHandler("t.Tick", Periodic{Every: time.Minute})
	c, err := Open(ctx, childConfig(dir, shards, Config{Handlers: []Handler{h}}))
	if err != nil {
		say("error %v", err)
		return 1
	}
	defer c.Close()
	s, err := c.newScheduler()
	if err != nil {
		say("error %v", err)
		return 1
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		n, _ := strconv.ParseInt(sc.Text(), 10, 64)
		if _, err := s.Tick(ctx, time.Unix(0, n).UTC()); err != nil {
			say("error %v", err)
			return 1
		}
		say("ok")
	}
	return 0
}

func TestClient_RunSchedulesPeriodicTasks(t *testing.T) {
	t.Parallel()
	h := periodicHandler("t.Second", Periodic{Every: time.Second})
	b := setup(t, Config{Shards: 1, Handlers: []Handler{h}})
	evs := collect(b.c, EventPeriodic, EventCompleted)
	run(t, b.c)
	got := waitEvents(t, evs, 4) // two slots, each enqueued then completed
	periodic := 0
	for _, e := range got {
		if e.Kind == EventPeriodic {
			periodic++
			if e.Slot.IsZero() || e.Task != "t.Second" {
				t.Errorf("periodic event = %+v", e)
			}
		}
	}
	if periodic < 2 {
		t.Errorf("periodic events = %d in %v, want 2", periodic, got)
	}
}
