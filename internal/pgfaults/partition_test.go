package pgfaults_test

import (
	"context"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/internal/pgtest"
)

// One of three worker processes is cut off from the server mid-run (a
// proxy in front of it stops moving bytes) until the other two have
// finished every job, its held ones included once the stuck timeout
// passed; then the network heals. Nothing is lost, every re-run is of a
// job the cut-off worker ran, explained by one of its late completions
// that the lease fence refused (counted), and the healed worker takes new
// jobs again by itself.
func TestPartitionedWorker(t *testing.T) {
	t.Parallel()
	n := 4000
	if testing.Short() {
		n = 1500
	}
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	ctx := t.Context()
	prod, err := openClient(ctx, dsn, schema, queuemax.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	enqueue := func(from, to int) {
		t.Helper()
		ps := make([]queuemax.EnqueueParams, 0, to-from)
		for k := from; k < to; k++ {
			ps = append(ps, queuemax.EnqueueParams{Task: "t.Job", Payload: args{N: k}})
		}
		if _, err := prod.EnqueueMany(ctx, ps); err != nil {
			t.Fatal(err)
		}
	}
	enqueue(0, n)

	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	px := newProxy(t, u.Host)
	viaProxy := *u
	viaProxy.Host = px.Addr()
	const stuck = 3 * time.Second
	slow := envSlow + "=2ms" // each job takes 2 ms, so every worker holds jobs at any time
	cut := startWorker(t, viaProxy.String(), schema, stuck, slow)
	ws := []*worker{cut, startWorker(t, dsn, schema, stuck, slow), startWorker(t, dsn, schema, stuck, slow)}

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// Cut it off once it has run a tenth of the jobs.
	for lines(cut.out) < n/10 {
		time.Sleep(5 * time.Millisecond)
	}
	px.Freeze()
	frozenAt := time.Now()
	waitDone(t, conn, schema, n, 2*time.Minute)
	t.Logf("cut off for %v", time.Since(frozenAt).Round(time.Millisecond))
	if time.Since(frozenAt) < stuck {
		t.Fatalf("all jobs done %v after the cut, before the stuck timeout (%v): the cut-off worker held none", time.Since(frozenAt), stuck)
	}
	ranBefore := lines(cut.out)
	px.Heal()

	// It rejoins: of new jobs, it runs some. The two others may finish a
	// batch before it has reconnected: then another batch is enqueued,
	// until it runs one (or a minute passed).
	const more = 600
	total := n
	deadline := time.Now().Add(time.Minute)
	for {
		if doneAll(t, conn, schema, total) {
			if time.Now().After(deadline) {
				t.Fatalf("the healed worker ran none of %d new jobs in a minute", total-n)
			}
			enqueue(total, total+more)
			total += more
		}
		rejoined := 0
		for k := range executions(t, ws[:1]) {
			if k >= n {
				rejoined++
			}
		}
		if rejoined > 0 {
			t.Logf("after healing the cut-off worker ran %d of %d new jobs", rejoined, total-n)
			break
		}
		time.Sleep(10 * time.Millisecond) // polling the worker's output file
	}
	waitDone(t, conn, schema, total, 2*time.Minute)

	var fenced, processed int64
	for i, w := range ws {
		p, l := w.stop(t)
		processed += p
		if i == 0 {
			fenced = l
		} else if l != 0 {
			t.Errorf("worker %d (never cut off) had %d acknowledgements fenced", i, l)
		}
	}
	reruns, rerunBy := verdict(t, conn, schema, total, executions(t, ws))
	t.Logf("%d jobs; the cut-off worker ran %d before healing; %d re-runs; %d late completions fenced", total, ranBefore, reruns, fenced)
	if fenced == 0 {
		t.Errorf("no late completion fenced: the cut-off worker had no acknowledgement in flight")
	}
	if rerunBy[1]+rerunBy[2] != 0 {
		t.Errorf("re-runs of jobs first run by the connected workers: %v", rerunBy)
	}
	// Each re-run is explained by a fenced late completion of the cut-off
	// worker; it may have had more fenced than re-runs (jobs it had
	// claimed, or prefetched, and never ran count as fenced too).
	if int64(rerunBy[0]) > fenced {
		t.Errorf("%d re-runs of the cut-off worker's jobs but only %d of its completions fenced: unexplained duplicates", rerunBy[0], fenced)
	}
	if processed != int64(total) {
		t.Errorf("%d completions acknowledged, want %d", processed, total)
	}
}

// lines counts the lines of file.
func lines(file string) int {
	b, _ := os.ReadFile(file)
	return strings.Count(string(b), "\n")
}
