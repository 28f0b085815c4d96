package queuemax

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Workflow chaos: several worker processes run workflows of 5 steps with
// fan-out and fan-in (a; b, c, d after a; e after b, c, d, binding b's
// result) while the test kills one with SIGKILL and starts another, again
// and again. Every handler appends (event, job, workflow, step, pid,
// time) to a record file outside the queue. The record must show that no
// step started before every step it comes after had finished, that every
// step ran to its end, and that a step ran more than once only after a
// killed process had started it, or a stuck timeout after a live one had
// (the live one stalled). QUEUEMAX_WF_CHAOS sets the number of
// workflows (default 300; the full size is 1000).

const (
	// wfChaosKills is how many times a process is killed. wfChaosStuck is
	// the children's stuck timeout: a killed process's jobs come back
	// after it, and a live process loses a job only if it stalls longer.
	wfChaosKills     = 12
	wfChaosStuck     = 2 * time.Second
	wfChaosRecordEnv = "QUEUEMAX_WF_RECORD"
	wfChaosTask      = "wfchaos.Step"
)

type wfChaosArgs struct {
	WF    int             `json:"wf"`
	Step  string          `json:"step"`
	FromB *wfChaosResult  `json:"from_b,omitempty"`
	Extra json.RawMessage `json:"extra,omitempty"`
}

type wfChaosResult struct {
	WF   int    `json:"wf"`
	Step string `json:"step"`
}

// wfChaosChild runs workers until killed.
func wfChaosChild(ctx context.Context, dir string, shards int, say func(string, ...any)) int {
	f, err := os.OpenFile(os.Getenv(wfChaosRecordEnv), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		say("error %v", err)
		return 1
	}
	defer f.Close()
	var mu sync.Mutex
	record := func(ev string, j int64, a wfChaosArgs) {
		mu.Lock()
		defer mu.Unlock()
		// One write of one line: O_APPEND keeps lines of processes apart.
		fmt.Fprintf(f, "%s %d %d %s %d %d\n", ev, j, a.WF, a.Step, os.Getpid(), time.Now().UnixNano())
	}
	h := Handler{Name: wfChaosTask, Func: func(ctx context.Context, j *Job) (any, error) {
		var a wfChaosArgs
		if err := DecodePayload(wfChaosTask, j.Payload, &a); err != nil {
			return nil, Permanent(err)
		}
		record("start", int64(j.ID), a)
		if a.Step == "e" {
			// The fan-in step reads its dependencies' results, stored and
			// bound.
			for _, d := range []string{"b", "c", "d"} {
				var r wfChaosResult
				err := StepResult(ctx, d, &r)
				if ctx.Err() != nil {
					// This attempt lost its lease (a stalled process) or
					// its process is stopping: not a wrong result.
					return nil, ctx.Err()
				}
				if err != nil || r.WF != a.WF || r.Step != d {
					record("bad", int64(j.ID), a)
					return nil, Permanent(fmt.Errorf("StepResult(%s) = %+v, %v", d, r, err))
				}
			}
			if a.FromB == nil || a.FromB.WF != a.WF || a.FromB.Step != "b" {
				record("bad", int64(j.ID), a)
				return nil, Permanent(fmt.Errorf("bound from_b = %+v", a.FromB))
			}
		}
		time.Sleep(time.Duration(rand.IntN(15000)) * time.Microsecond) // the step's work
		record("end", int64(j.ID), a)
		return wfChaosResult{WF: a.WF, Step: a.Step}, nil
	}}
	c, err := Open(ctx, childConfig(dir, shards, Config{Logger: slog.New(slog.DiscardHandler), Handlers: []Handler{h}, Workers: 8, HeartbeatInterval: 100 * time.Millisecond,
		StuckTimeout: wfChaosStuck, RecoveryInterval: 100 * time.Millisecond, DrainTimeout: time.Second}))
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

func wfChaosCount(t *testing.T) int {
	n := 300
	if testing.Short() {
		n = 60
	}
	if s := os.Getenv("QUEUEMAX_WF_CHAOS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("QUEUEMAX_WF_CHAOS=%q: want a positive number", s)
		}
		n = v
	}
	return n
}

func TestWorkflowChaos_KillNine(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		b := setup(t, Config{Dir: dir, Shards: 4})
		wfChaos(t, b, dir, 4, nil)
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		t.Parallel()
		dsn := pgTestDSN(t)
		schema := pgTestSchema(t, dsn)
		b := setup(t, Config{Store: &pgTarget{dsn: dsn, schema: schema}})
		wfChaos(t, b, t.TempDir(), 0, pgEnv(dsn, schema))
	})
}

func wfChaos(t *testing.T, b *testBundle, dir string, shards int, env []string) {
	n := wfChaosCount(t)
	ctx := b.ctx
	deps := map[string][]string{"a": nil, "b": {"a"}, "c": {"a"}, "d": {"a"}, "e": {"b", "c", "d"}}
	ids := make([]WorkflowID, n)
	for i := range n {
		wf := NewWorkflow("chaos-" + strconv.Itoa(i))
		// Each kill also takes back the jobs the killed process had
		// claimed ahead: a budget that many kills cannot exhaust.
		budget := StepOpts(Opts{MaxRetries: Ptr(100)})
		for _, s := range []string{"a", "b", "c", "d"} {
			wf.Add(s, wfChaosTask, wfChaosArgs{WF: i, Step: s}, After(deps[s]...), budget)
		}
		wf.Add("e", wfChaosTask, wfChaosArgs{WF: i, Step: "e"}, After("c", "d"), Bind("from_b", "b"), budget)
		id, err := b.c.EnqueueWorkflow(ctx, wf)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	record := filepath.Join(t.TempDir(), "record")
	env = append(env, wfChaosRecordEnv+"="+record)
	const procs = 3
	kids := make([]*child, procs)
	start := func(i int) {
		kids[i] = startChild(t, "wfchaos", dir, shards, env...)
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
		if st.Workflows.Completed+st.Workflows.Failed+st.Workflows.Cancelled == int64(n) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d kills: workflows %+v of %d", kills, st.Workflows, n)
		}
		if kills == wfChaosKills {
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
	// Every workflow completed, every step completed.
	for _, id := range ids {
		info, err := b.c.Workflow(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if info.Status != WorkflowCompleted {
			t.Errorf("workflow %s: %s: %+v", info.Name, info.Status, info.Steps)
		}
	}
	type rec struct {
		ev   string
		pid  int
		at   int64
		line int
	}
	f, err := os.Open(record)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byStep := map[string][]rec{} // "wf/step"
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		var ev, step string
		var job int64
		var wf, pid int
		var at int64
		if _, err := fmt.Sscanf(sc.Text(), "%s %d %d %s %d %d", &ev, &job, &wf, &step, &pid, &at); err != nil {
			// A process killed mid-write leaves at most a torn last line.
			if !killed[pidOf(sc.Text())] {
				t.Errorf("record line %d %q: %v", line, sc.Text(), err)
			}
			continue
		}
		if ev == "bad" {
			t.Errorf("workflow %d step %s read wrong results (pid %d)", wf, step, pid)
		}
		k := strconv.Itoa(wf) + "/" + step
		byStep[k] = append(byStep[k], rec{ev: ev, pid: pid, at: at, line: line})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	reruns, stalled := 0, 0
	for i := range n {
		for step, ds := range deps {
			k := strconv.Itoa(i) + "/" + step
			rs := byStep[k]
			var starts []rec
			ended := false
			for _, r := range rs {
				switch r.ev {
				case "start":
					starts = append(starts, r)
				case "end":
					ended = true
				}
			}
			if len(starts) == 0 || !ended {
				t.Errorf("step %s: lost (%d starts, ended %v)", k, len(starts), ended)
				continue
			}
			// Every start but the last was a killed process's attempt, or
			// one whose lease had expired: recovery takes a job back only
			// when its heartbeat is older than the stuck timeout, so a live
			// process's attempt may run again only that long after it
			// started (the process stalled: a loaded machine under -race).
			for i, s := range starts[:len(starts)-1] {
				switch next := starts[i+1]; {
				case killed[s.pid]:
					reruns++
				case time.Duration(next.at-s.at) >= wfChaosStuck:
					stalled++
				default:
					t.Errorf("step %s ran twice: an attempt of pid %d, which was not killed, was repeated %v after it started (stuck timeout %v)",
						k, s.pid, time.Duration(next.at-s.at), wfChaosStuck)
				}
			}
			// No start before every dependency had ended.
			for _, s := range starts {
				for _, d := range ds {
					ok := false
					for _, r := range byStep[strconv.Itoa(i)+"/"+d] {
						if r.ev == "end" && r.at < s.at {
							ok = true
						}
					}
					if !ok {
						t.Errorf("step %s started (line %d) before its dependency %s ended", k, s.line, d)
					}
				}
			}
		}
	}
	t.Logf("%d workflows of 5 steps, %d processes, %d kills, %d re-runs of killed attempts, %d of attempts whose lease expired", n, procs, kills, reruns, stalled)
}

func pidOf(line string) int {
	f := strings.Fields(line)
	if len(f) < 5 {
		return 0
	}
	p, _ := strconv.Atoi(f[4])
	return p
}
