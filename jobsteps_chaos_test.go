package queuemax

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Job-step chaos: worker processes run jobs that are chains of three job
// steps while the test kills one with SIGKILL and starts another, again
// and again. Step one returns a value, step two walks five items with a
// cursor, step three reads both. Every side effect is appended as one line
// (event, job, step, pid, time) to a record file outside the queue, with
// O_APPEND. The record must show each side effect happening once per job,
// except where a killed process had already done it (it died before its
// step, or its item's cursor, was recorded) or a live one had done it a
// stuck timeout earlier (it stalled, and recovery took its job back), that no step ran with another
// step's wrong result, and every job must complete. QUEUEMAX_STEP_CHAOS
// sets the number of jobs (default 200).

const (
	stepChaosKills     = 10
	stepChaosRecordEnv = "QUEUEMAX_STEP_RECORD"
	stepChaosTask      = "stepchaos.Job"
	stepChaosItems     = 5
	// stepChaosStuck is the children's stuck timeout.
	stepChaosStuck = 2 * time.Second
)

type stepChaosArgs struct {
	N int `json:"n"`
}

// stepChaosChild runs workers until killed.
func stepChaosChild(ctx context.Context, dir string, shards int, say func(string, ...any)) int {
	f, err := os.OpenFile(os.Getenv(stepChaosRecordEnv), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		say("error %v", err)
		return 1
	}
	defer f.Close()
	var mu sync.Mutex
	record := func(ev string, n int, step string) {
		mu.Lock()
		defer mu.Unlock()
		// One write of one line: O_APPEND keeps lines of processes apart.
		fmt.Fprintf(f, "%s %d %s %d %d\n", ev, n, step, os.Getpid(), time.Now().UnixNano())
	}
	work := func() { time.Sleep(time.Duration(rand.IntN(12000)) * time.Microsecond) }
	h := Define(stepChaosTask, TaskOptions{MaxRetries: Ptr(100)}, func(ctx context.Context, a stepChaosArgs) error {
		one, err := Step(ctx, "one", func(ctx context.Context) (int, error) {
			work()
			record("effect", a.N, "one")
			return a.N * 7, nil
		})
		if err != nil {
			return err
		}
		if err := Do(ctx, "two", func(ctx context.Context) error {
			next, _, err := Cursor[int](ctx)
			if err != nil {
				return err
			}
			for i := next; i < stepChaosItems; i++ {
				work()
				record("effect", a.N, "two."+strconv.Itoa(i))
				if err := SetCursor(ctx, i+1); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
		_, err = Step(ctx, "three", func(ctx context.Context) (string, error) {
			if one != a.N*7 {
				record("bad", a.N, "three")
				return "", Permanent(fmt.Errorf("step one's result = %d, want %d", one, a.N*7))
			}
			work()
			record("effect", a.N, "three")
			return "done", nil
		})
		return err
	})
	c, err := Open(ctx, childConfig(dir, shards, Config{
		Logger: slog.New(slog.DiscardHandler), Handlers: []Handler{h}, Workers: 2, HeartbeatInterval: 100 * time.Millisecond,
		StuckTimeout: stepChaosStuck, RecoveryInterval: 100 * time.Millisecond, DrainTimeout: time.Second}))
	if err != nil {
		say("error %v", err)
		return 1
	}
	defer c.Close()
	say("ready")
	if err := c.Run(ctx); err != nil {
		say("error %v", err)
		return 1
	}
	return 0
}

func TestStepChaos_KillNine(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		b := setup(t, Config{Dir: dir, Shards: 4})
		stepChaos(t, b, dir, 4, nil)
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		t.Parallel()
		dsn := pgTestDSN(t)
		schema := pgTestSchema(t, dsn)
		b := setup(t, Config{Store: &pgTarget{dsn: dsn, schema: schema}})
		stepChaos(t, b, t.TempDir(), 0, pgEnv(dsn, schema))
	})
}

func stepChaosCount(t *testing.T) int {
	n := 200
	if testing.Short() {
		n = 40
	}
	if s := os.Getenv("QUEUEMAX_STEP_CHAOS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("QUEUEMAX_STEP_CHAOS=%q: want a positive number", s)
		}
		n = v
	}
	return n
}

func stepChaos(t *testing.T, b *testBundle, dir string, shards int, env []string) {
	n := stepChaosCount(t)
	ctx := b.ctx
	for i := range n {
		if _, err := b.c.Enqueue(ctx, stepChaosTask, stepChaosArgs{N: i}, Opts{MaxRetries: Ptr(100)}); err != nil {
			t.Fatal(err)
		}
	}
	record := filepath.Join(t.TempDir(), "record")
	env = append(env, stepChaosRecordEnv+"="+record)
	const procs = 3
	kids := make([]*child, procs)
	start := func(i int) {
		kids[i] = startChild(t, "stepchaos", dir, shards, env...)
		kids[i].expect(t, "ready")
	}
	for i := range procs {
		start(i)
	}
	killed := map[int]bool{}
	kills := 0
	deadline := time.Now().Add(3*time.Minute + time.Duration(n)*50*time.Millisecond)
	for {
		st, err := b.c.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Completed+st.Failed == int64(n) {
			if st.Failed != 0 {
				t.Errorf("%d of %d jobs failed", st.Failed, n)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d kills: %+v of %d jobs", kills, st, n)
		}
		if kills == stepChaosKills {
			time.Sleep(20 * time.Millisecond) // polling for the end, no more kills
			continue
		}
		// Let the processes work a while, then kill one at random and
		// start a replacement: chaos, not synchronisation.
		time.Sleep(time.Duration(30+rand.IntN(150)) * time.Millisecond)
		i := rand.IntN(procs)
		pid := kids[i].cmd.Process.Pid
		kids[i].cmd.Process.Signal(syscall.SIGKILL)
		kids[i].cmd.Wait()
		killed[pid] = true
		kills++
		start(i)
	}
	for _, k := range kids {
		k.cmd.Process.Signal(syscall.SIGTERM)
		k.cmd.Wait()
	}

	f, err := os.Open(record)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type effect struct {
		pid int
		at  int64
	}
	effects := map[string][]effect{} // "job/step" → who did it when, in order
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		var ev, step string
		var job, pid int
		var at int64
		if _, err := fmt.Sscanf(sc.Text(), "%s %d %s %d %d", &ev, &job, &step, &pid, &at); err != nil {
			// A process killed mid-write leaves at most a torn last line.
			t.Logf("record line %d %q: %v (a torn write of a killed process?)", line, sc.Text(), err)
			continue
		}
		switch ev {
		case "bad":
			t.Errorf("job %d step %s read a wrong result (pid %d)", job, step, pid)
		case "effect":
			k := strconv.Itoa(job) + "/" + step
			effects[k] = append(effects[k], effect{pid, at})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	steps := []string{"one"}
	for i := range stepChaosItems {
		steps = append(steps, "two."+strconv.Itoa(i))
	}
	steps = append(steps, "three")
	repeats := 0
	for i := range n {
		for si, s := range steps {
			k := strconv.Itoa(i) + "/" + s
			es := effects[k]
			if len(es) == 0 {
				t.Errorf("side effect %s never happened", k)
				continue
			}
			// Every effect but the last was done by a process killed
			// inside that step, before it recorded the step (or the
			// item's cursor), or by a live one that stalled there past
			// the stuck timeout (recovery took its job back): it did
			// nothing of a later step or item.
			for x, e := range es[:len(es)-1] {
				gap := time.Duration(es[x+1].at - e.at)
				if !killed[e.pid] && gap < stepChaosStuck {
					t.Errorf("side effect %s happened %d times: pid %d, which was not killed, did it %v before another process did it again (stuck timeout %v)", k, len(es), e.pid, gap, stepChaosStuck)
				}
				for _, later := range steps[si+1:] {
					if slices.ContainsFunc(effects[strconv.Itoa(i)+"/"+later], func(l effect) bool { return l.pid == e.pid }) {
						t.Errorf("side effect %s happened %d times: pid %d did it and went on to %s, so the step was recorded, yet it ran again", k, len(es), e.pid, later)
						break
					}
				}
			}
			repeats += len(es) - 1
		}
	}
	t.Logf("%d jobs of 3 steps (%d side effects each), %d processes, %d kills, %d side effects repeated after a kill or a stall",
		n, len(steps), procs, kills, repeats)
}
