package browsertest

// End-to-end tests of the dashboard in a real browser: Debian's chromium,
// headless, driven with chromedp. Outside CI they skip when chromium is
// missing; with CI=true they fail instead. Screenshots go to
// $QUEUEMAX_SCREENSHOTS (or a temporary directory; the test logs it), and
// QUEUEMAX_DOCS_SCREENSHOT=docs/dashboard.png rewrites the README's
// screenshot.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxhttp"
)

// adminTestToken is the admin token of the dashboard fixtures.
const adminTestToken = "s3cret-token"

// chromiumFlags are the browser's flags: headless, no sandbox (CI runs as
// root), and nothing that reaches the network on its own.
var chromiumFlags = []string{"headless", "no-sandbox", "disable-gpu", "disable-quic", "no-first-run",
	"disable-background-networking", "disable-component-update", "disable-sync"}

// newBrowser starts chromium with an empty profile and returns its
// context; tabs are made with newTab.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if _, serr := os.Stat("/usr/bin/chromium"); serr == nil {
			path, err = "/usr/bin/chromium", nil
		}
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium not found (%v): .ci/run installs Debian's chromium package; the browser tests must run in CI", err)
		}
		t.Skipf("chromium not found (%v): install Debian's chromium package (apt-get install chromium) to run the browser tests", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("force-color-profile", "srgb"),
	}
	for _, f := range chromiumFlags {
		opts = append(opts, chromedp.Flag(f, true))
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.WithoutCancel(t.Context()), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	// Starting the browser: the first Do launches it.
	if err := chromedp.Do(bctx); err != nil {
		cancelBrowser()
		cancelAlloc()
		t.Fatalf("starting chromium %s: %v", path, err)
	}
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	return bctx
}

// newTab opens a tab with its own session storage and a deadline.
func newTab(t *testing.T, browser context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	limit := 90 * time.Second
	if os.Getenv("QUEUEMAX_DOCS_SCREENSHOT") != "" {
		limit = 5 * time.Minute // docsScreenshot fills the chart in real time
	}
	ctx, cancelTimeout := context.WithTimeout(ctx, limit)
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
	})
	return ctx
}

// screenshotDir is where screenshots go; the first call logs it.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("QUEUEMAX_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(screenshotDir(t), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// do runs browser steps, failing the test with what it was doing.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// waitJS waits until the JavaScript expression is true; on timeout it
// reports what the expression diag shows.
func waitJS(t *testing.T, ctx context.Context, expr, diag string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(45*time.Second), chromedp.WithPollingInterval(50*time.Millisecond)))
	if err != nil {
		got := "?"
		if diag != "" {
			if v, derr := chromedp.Run(ctx, chromedp.Evaluate[any](diag)); derr == nil {
				b, _ := json.Marshal(v)
				got = string(b)
			}
		}
		t.Fatalf("waiting for %s: %v (page shows %s)", expr, err, got)
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// textIs is a JS expression: the element's trimmed text equals want.
func textIs(sel, want string) string {
	return fmt.Sprintf(`(document.querySelector(%s)?.textContent || "").trim() === %s`, jsString(sel), jsString(want))
}

func textOf(sel string) string {
	return fmt.Sprintf(`(document.querySelector(%s)?.textContent || "<missing>").trim()`, jsString(sel))
}

// waitFor polls cond with a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// dashFixture is a queue with completed, dead-lettered, pending and
// scheduled jobs, a worker running in the test process, and the admin
// handler (with the dashboard) under /admin/ of an httptest server.
type dashFixture struct {
	c         *queuemax.Client
	url       string              // the dashboard: <server>/admin/ui/
	stop      func()              // stops the worker
	charged   chan queuemax.JobID // billing.charge's later runs send their job here, then wait for release
	release   chan struct{}       // closed by the test
	chargeRun atomic.Int32
	corrupt   queuemax.JobID // report.build: panicked, dead-lettered with a stack
	charge    queuemax.JobID // billing.charge: failed permanently on its first run
	mail      queuemax.JobID // mail.send to ana@example.com: completed with a result
}

func newDashFixture(t *testing.T, token string) *dashFixture {
	t.Helper()
	f := &dashFixture{charged: make(chan queuemax.JobID, 4), release: make(chan struct{})}
	zero := 0
	handlers := []queuemax.Handler{
		{Name: "mail.send", Options: queuemax.TaskOptions{RetryDelay: 200 * time.Millisecond}, Func: func(ctx context.Context, j *queuemax.Job) (any, error) {
			var p struct {
				To    string `json:"to"`
				Flaky bool   `json:"flaky"`
			}
			_ = json.Unmarshal(j.Payload, &p)
			if p.Flaky && j.Attempts == 1 {
				return nil, errors.New("smtp 421: try again later")
			}
			return map[string]any{"delivered_to": p.To, "message_id": fmt.Sprintf("<%d@mail.example>", j.ID)}, nil
		}},
		{Name: "report.build", Options: queuemax.TaskOptions{MaxRetries: &zero}, Func: func(ctx context.Context, j *queuemax.Job) (any, error) {
			if strings.Contains(string(j.Payload), `"corrupt":true`) {
				panic("report input is corrupt: unexpected EOF in row 17")
			}
			return map[string]any{"rows": 1200}, nil
		}},
		{Name: "billing.charge", Options: queuemax.TaskOptions{MaxRetries: &zero}, Func: func(ctx context.Context, j *queuemax.Job) (any, error) {
			if f.chargeRun.Add(1) == 1 {
				return nil, queuemax.Permanent(errors.New("card declined: gateway timeout"))
			}
			f.charged <- j.ID
			select {
			case <-f.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return map[string]any{"charged": true, "amount_cents": 4200}, nil
		}},
	}
	b := setup(t, queuemax.Config{Shards: 3, Handlers: handlers, PollInterval: 20 * time.Millisecond,
		AllowUnknownTasks: true}) // legacy.import has no handler on purpose
	f.c = b.c
	ctx := b.ctx
	enq := func(task string, payload any, o queuemax.Opts) queuemax.JobID {
		t.Helper()
		id, err := f.c.Enqueue(ctx, task, payload, o)
		if err != nil {
			t.Fatalf("Enqueue %s: %v", task, err)
		}
		return id
	}
	f.mail = enq("mail.send", map[string]any{"to": "ana@example.com", "subject": "Welcome"}, queuemax.Opts{})
	enq("mail.send", map[string]any{"to": "bo@example.com", "subject": "Invoice 1042"}, queuemax.Opts{})
	enq("mail.send", map[string]any{"to": "cy@example.com", "subject": "Reminder"}, queuemax.Opts{RunAt: time.Now().Add(time.Hour)})
	enq("report.build", map[string]any{"report": "q2"}, queuemax.Opts{})
	f.corrupt = enq("report.build", map[string]any{"report": "q3", "corrupt": true}, queuemax.Opts{})
	f.charge = enq("billing.charge", map[string]any{"invoice": 1042, "amount_cents": 4200}, queuemax.Opts{})
	enq("legacy.import", map[string]any{"file": "2019.csv"}, queuemax.Opts{}) // no handler: stays pending
	enq("legacy.import", map[string]any{"file": "2020.csv"}, queuemax.Opts{})

	f.stop = run(t, f.c)
	waitFor(t, "the fixture's jobs to settle", func() bool {
		s, err := f.c.Stats(ctx)
		return err == nil && s.Completed == 3 && s.Failed == 2 && s.DeadLetters == 2 && s.Pending == 2 && s.Scheduled == 1 && s.Processing == 0
	})

	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", queuemaxhttp.NewHandler(f.c, queuemaxhttp.Options{Token: token})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f.url = srv.URL + "/admin/ui/"
	return f
}

func TestDashboardBrowser(t *testing.T) {
	browser := newBrowser(t)

	t.Run("OverviewMatchesStats", func(t *testing.T) {
		f := newDashFixture(t, adminTestToken)
		tab := newTab(t, browser)
		do(t, tab, "open the overview", chromedp.Navigate(f.url))
		s, err := f.c.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for st, n := range map[string]int64{"pending": s.Pending, "scheduled": s.Scheduled, "processing": s.Processing,
			"completed": s.Completed, "failed": s.Failed, "dead_letters": s.DeadLetters} {
			sel := "#count-" + st + " .n"
			waitJS(t, tab, textIs(sel, fmt.Sprint(n)), textOf(sel))
		}
		// Per task: mail.send has 2 completed and 1 scheduled job.
		ts, err := f.c.TaskStats(t.Context(), "mail.send")
		if err != nil {
			t.Fatal(err)
		}
		row := `#tasks tr[data-task="mail.send"] td`
		waitJS(t, tab, fmt.Sprintf(`[...document.querySelectorAll(%s)].slice(1, 6).map(td => td.textContent).join(",") === %s`,
			jsString(row), jsString(fmt.Sprintf("%d,%d,%d,%d,%d", ts.Pending, ts.Scheduled, ts.Processing, ts.Completed, ts.Failed))),
			fmt.Sprintf(`[...document.querySelectorAll(%s)].map(td => td.textContent)`, jsString(row)))
		// Per shard: one row per shard, their pending summing to Stats.
		waitJS(t, tab, fmt.Sprintf(`document.querySelectorAll("#shards tr[data-shard]").length === %d`, s.NumShards), "")
		var sum int64
		for _, sh := range s.PerShard {
			sum += sh.Pending
			sel := fmt.Sprintf(`#shards tr[data-shard="%d"] td:nth-child(2)`, sh.Shard)
			waitJS(t, tab, textIs(sel, fmt.Sprint(sh.Pending)), textOf(sel))
		}
		if sum != s.Pending {
			t.Errorf("per-shard pending sums to %d, Stats.Pending = %d", sum, s.Pending)
		}
		// The worker of this process, and its breakers.
		waitJS(t, tab, `document.querySelector("#workers td.mono")?.textContent.length > 0`, textOf("#workers"))
		waitJS(t, tab, `document.querySelectorAll("#breakers tbody tr").length === 3`, textOf("#breakers"))

		// Live throughput: two more completions (one after a retry) show up
		// in the chart's totals without a reload.
		for _, p := range []map[string]any{{"to": "di@example.com"}, {"to": "ed@example.com", "flaky": true}} {
			if _, err := f.c.Enqueue(t.Context(), "mail.send", p, queuemax.Opts{}); err != nil {
				t.Fatal(err)
			}
		}
		waitJS(t, tab, textIs("#total-completed b", "2"), textOf("#legend"))
		waitJS(t, tab, textIs("#total-retried b", "1"), textOf("#legend"))
		waitJS(t, tab, `document.querySelectorAll('#chart polyline[data-series="completed"]').length > 0`, "")
		s, err = f.c.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		waitJS(t, tab, textIs("#count-completed .n", fmt.Sprint(s.Completed)), textOf("#count-completed .n"))
		screenshot(t, tab, "overview")

		if out := os.Getenv("QUEUEMAX_DOCS_SCREENSHOT"); out != "" {
			docsScreenshot(t, f, tab, out)
		}
	})

	t.Run("FilterJobList", func(t *testing.T) {
		f := newDashFixture(t, adminTestToken)
		tab := newTab(t, browser)
		rowsJS := `[...document.querySelectorAll("#job-list tr[data-job]")].map(r => r.dataset.job).sort().join(",")`
		loaded := `document.querySelector("#view").dataset.loaded === location.hash`
		do(t, tab, "open the job list", chromedp.Navigate(f.url+"#/jobs"))
		waitJS(t, tab, loaded+` && document.querySelectorAll("#job-list tr[data-job]").length === 8`, rowsJS)

		// Status failed: the two dead jobs.
		do(t, tab, "filter by status",
			chromedp.SetValue("#filter-status", "failed"),
			chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
				_, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector("#filter-status").dispatchEvent(new Event("change"))`))
				return err
			}))
		waitJS(t, tab, loaded+` && location.hash === "#/jobs?status=failed" && `+rowsJS+` === `+jsString(idList(f.charge, f.corrupt)), rowsJS)

		// Text: only the corrupt report among the failed jobs.
		do(t, tab, "filter by text", chromedp.SendKeys("#filter-q", "unexpected eof"), chromedp.Click(`#filters button[type=submit]`))
		waitJS(t, tab, loaded+` && location.hash.includes("q=unexpected") && `+rowsJS+` === `+jsString(idList(f.corrupt)), rowsJS)
		screenshot(t, tab, "jobs-filtered")

		// Task and shard come from the address too.
		do(t, tab, "filter by task and shard", chromedp.Navigate(fmt.Sprintf("%s#/jobs?task=legacy.import&shard=%d", f.url, f.mail.Shard())))
		want, err := f.c.Jobs(t.Context(), queuemax.ListParams{Task: "legacy.import", Shard: queuemax.Ptr(f.mail.Shard())})
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]queuemax.JobID, len(want))
		for i, j := range want {
			ids[i] = j.ID
		}
		waitJS(t, tab, loaded+` && `+rowsJS+` === `+jsString(idList(ids...)), rowsJS)
	})

	t.Run("OpenJob", func(t *testing.T) {
		f := newDashFixture(t, adminTestToken)
		// The failed report recorded job steps (as an earlier attempt's
		// queuemax.Step and SetCursor would have).
		if err := f.c.ResetJobSteps(t.Context(), f.corrupt, []queuemax.JobStep{
			{Name: "fetch", Done: true, Result: json.RawMessage(`{"rows":40}`)},
			{Name: "parse", Cursor: json.RawMessage(`17`)},
		}); err != nil {
			t.Fatal(err)
		}
		tab := newTab(t, browser)
		do(t, tab, "open the failed jobs", chromedp.Navigate(f.url+"#/jobs?status=failed"))
		do(t, tab, "click the corrupt report", chromedp.Click(fmt.Sprintf(`#job-list tr[data-job="%d"] a`, f.corrupt)))
		waitJS(t, tab, textIs("#job-id", f.corrupt.String())+` && location.hash === "#/jobs/`+f.corrupt.String()+`"`, textOf("#view"))
		waitJS(t, tab, textIs("#job-status", "failed"), textOf("#job-status"))
		waitJS(t, tab, `document.querySelector("#job-payload")?.textContent.includes('"corrupt": true')`, textOf("#job-payload"))
		waitJS(t, tab, `document.querySelector("#job-error")?.textContent.includes("unexpected EOF in row 17")`, textOf("#job-error"))
		waitJS(t, tab, `document.querySelector("#job-stack")?.textContent.includes("goroutine")`, textOf("#job-stack"))
		waitJS(t, tab, textIs("#job-attempts", "1 of 1"), textOf("#job-attempts"))
		waitJS(t, tab, `(() => { const s = document.querySelector("#job-steps")?.textContent || "";
			return s.includes("Steps (1 of 2 done)") && s.includes("fetch") && s.includes('{"rows":40}') && s.includes("cursor 17"); })()`, textOf("#job-steps"))
		j, err := f.c.Job(t.Context(), f.corrupt)
		if err != nil {
			t.Fatal(err)
		}
		waitJS(t, tab, textIs("#job-worker", j.WorkerID), textOf("#job-worker"))
		screenshot(t, tab, "job-failed")

		do(t, tab, "open a completed job", chromedp.Navigate(f.url+"#/jobs/"+f.mail.String()))
		waitJS(t, tab, textIs("#job-status", "completed"), textOf("#job-status"))
		waitJS(t, tab, `document.querySelector("#job-result")?.textContent.includes("ana@example.com")`, textOf("#job-result"))
	})

	t.Run("RetryDeadLetterRuns", func(t *testing.T) {
		f := newDashFixture(t, adminTestToken)
		tab := newTab(t, browser)
		dl := deadLetterOf(t, f, f.charge)
		do(t, tab, "open the dead letters", chromedp.Navigate(f.url+"#/dead"))
		do(t, tab, "enter the token", chromedp.SendKeys("#token", adminTestToken), chromedp.Click(`#token-form button`))
		waitJS(t, tab, textIs("#mode", "unlocked"), textOf("#mode"))
		btn := fmt.Sprintf(`button[data-requeue="%d/%d"]`, dl.Shard, dl.ID)
		do(t, tab, "requeue", chromedp.Click(btn))
		waitJS(t, tab, `document.querySelector("#flash")?.textContent.startsWith("Re-queued as job `+f.charge.String()+`")`, textOf("#flash"))
		do(t, tab, "open the job", chromedp.Click(`#flash a`))
		select {
		case id := <-f.charged:
			if id != f.charge {
				t.Fatalf("ran job %d, want %d", id, f.charge)
			}
		case <-time.After(45 * time.Second):
			t.Fatal("the re-queued job did not run")
		}
		// While it runs, the page shows it processing, held by this worker.
		ws, _ := f.c.WorkerStats()
		waitJS(t, tab, textIs("#job-status", "processing"), textOf("#job-status"))
		waitJS(t, tab, textIs("#job-worker", ws.WorkerID), textOf("#job-worker"))
		screenshot(t, tab, "job-running")
		close(f.release)
		waitJS(t, tab, textIs("#job-status", "completed"), textOf("#job-status"))
		waitJS(t, tab, `document.querySelector("#job-result")?.textContent.includes('"charged": true')`, textOf("#job-result"))
		screenshot(t, tab, "job-retried")
		if dls, err := f.c.DeadLetters(t.Context(), queuemax.ListParams{Task: "billing.charge"}); err != nil || len(dls) != 0 {
			t.Errorf("billing dead letters after requeue = %v, %v; want none", dls, err)
		}
	})

	t.Run("ActionRefusedWithoutToken", func(t *testing.T) {
		f := newDashFixture(t, adminTestToken)
		tab := newTab(t, browser)
		dl := deadLetterOf(t, f, f.charge)
		do(t, tab, "open the dead letters", chromedp.Navigate(f.url+"#/dead"))
		waitJS(t, tab, textIs("#mode", "locked"), textOf("#mode"))
		do(t, tab, "requeue without the token", chromedp.Click(fmt.Sprintf(`button[data-requeue="%d/%d"]`, dl.Shard, dl.ID)))
		waitJS(t, tab, `document.querySelector("#flash.error")?.textContent.includes("missing bearer token")`, textOf("#flash"))
		screenshot(t, tab, "refused")
		if f.chargeRun.Load() != 1 {
			t.Errorf("billing.charge ran %d times, want 1 (the refused requeue must not run it)", f.chargeRun.Load())
		}
		deadLetterOf(t, f, f.charge) // still there

		// A wrong token is refused too.
		do(t, tab, "enter a wrong token", chromedp.SendKeys("#token", "not-the-token"), chromedp.Click(`#token-form button`))
		waitJS(t, tab, textIs("#mode", "unlocked")+` && document.querySelector("#view").dataset.loaded === location.hash`, textOf("#mode"))
		do(t, tab, "requeue with a wrong token", chromedp.Click(fmt.Sprintf(`button[data-requeue="%d/%d"]`, dl.Shard, dl.ID)))
		waitJS(t, tab, `document.querySelector("#flash.error")?.textContent.includes("invalid bearer token")`, textOf("#flash"))
		deadLetterOf(t, f, f.charge)

		// The dead letters filter by task.
		do(t, tab, "filter the dead letters", chromedp.Navigate(f.url+"#/dead?task=billing.charge"))
		waitJS(t, tab, `document.querySelector("#view").dataset.loaded === location.hash && document.querySelectorAll("#dead-list tr[data-dead]").length === 1 && `+
			textIs("#dead-filter-task option:checked", "billing.charge"), textOf("#dead-list"))

		// Without a configured token the dashboard is read-only: no
		// action button is enabled.
		ro := httptest.NewServer(http.StripPrefix("/admin", queuemaxhttp.NewHandler(f.c, queuemaxhttp.Options{})))
		t.Cleanup(ro.Close)
		do(t, tab, "open a read-only dashboard", chromedp.Navigate(ro.URL+"/admin/ui/#/dead"))
		waitJS(t, tab, textIs("#mode", "read-only")+` && document.querySelectorAll("button[data-requeue]").length === 2 && [...document.querySelectorAll("button[data-requeue]")].every(b => b.disabled)`, textOf("#view"))
	})

	t.Run("PauseAndResumeQueue", func(t *testing.T) {
		f := newDashFixture(t, adminTestToken)
		tab := newTab(t, browser)
		do(t, tab, "open the overview", chromedp.Navigate(f.url))
		do(t, tab, "enter the token", chromedp.SendKeys("#token", adminTestToken), chromedp.Click(`#token-form button`))
		waitJS(t, tab, `document.querySelector("#queue-toggle-default") !== null`, textOf("#queues"))
		do(t, tab, "pause the default queue", chromedp.Click("#queue-toggle-default"))
		waitJS(t, tab, textIs("#flash", "Queue default paused: workers start none of its jobs."), textOf("#flash"))
		if qs, err := f.c.Queues(t.Context()); err != nil || len(qs) == 0 || qs[0].Name != "default" || !qs[0].Paused {
			t.Errorf("after the pause button: Queues = %+v, %v; want default paused", qs, err)
		}
		waitJS(t, tab, `document.querySelector("#queue-toggle-default")?.textContent === "Resume"`, textOf("#queues"))
		do(t, tab, "resume the default queue", chromedp.Click("#queue-toggle-default"))
		waitJS(t, tab, textIs("#flash", "Queue default resumed."), textOf("#flash"))
		if qs, err := f.c.Queues(t.Context()); err != nil || len(qs) == 0 || qs[0].Paused {
			t.Errorf("after the resume button: Queues = %+v, %v; want default running", qs, err)
		}
	})

	t.Run("QueueLimits", func(t *testing.T) { testQueueLimitsUI(t, browser) }) // queues_limit_test.go

	t.Run("PurgeAsksFirst", func(t *testing.T) {
		f := newDashFixture(t, adminTestToken)
		tab := newTab(t, browser)
		do(t, tab, "open the overview", chromedp.Navigate(f.url))
		do(t, tab, "enter the token", chromedp.SendKeys("#token", adminTestToken), chromedp.Click(`#token-form button`))
		waitJS(t, tab, textIs("#count-completed .n", "3"), textOf("#count-completed .n"))
		do(t, tab, "open the purge dialog", chromedp.Click("#purge"), chromedp.WaitVisible("#confirm"),
			chromedp.Click(`#confirm-statuses input[value="completed"]`))
		waitJS(t, tab, `document.querySelector("#confirm-ok").disabled`, "")
		do(t, tab, "confirm", chromedp.SendKeys("#confirm-text", "purge"))
		waitJS(t, tab, `!document.querySelector("#confirm-ok").disabled`, "")
		do(t, tab, "purge", chromedp.Click("#confirm-ok"))
		waitJS(t, tab, textIs("#flash", "Purged 3 job(s)."), textOf("#flash"))
		if s, err := f.c.Stats(t.Context()); err != nil || s.Completed != 0 || s.Pending != 2 {
			t.Errorf("after purging completed jobs: Stats = %+v, %v", s, err)
		}
	})

	t.Run("StoredBreakerAndHeldJob", func(t *testing.T) {
		// A worker (another client on the directory) opens the task's
		// breaker; the dashboard's own client runs no worker and still shows
		// the stored breaker, in the task row and the breaker panel, and why
		// the waiting job is held.
		dir := t.TempDir()
		h := queuemax.Define("pay.api", queuemax.TaskOptions{MaxRetries: queuemax.Ptr(0)}, func(context.Context, struct{}) error {
			return queuemax.Unavailable(errors.New("payments API: 503"))
		})
		w := setup(t, queuemax.Config{Dir: dir, Shards: 1, Handlers: []queuemax.Handler{h}, CircuitThreshold: 1, CircuitTimeout: time.Hour})
		failed, _ := w.c.Subscribe(queuemax.EventFailed)
		run(t, w.c)
		if _, err := w.c.Enqueue(t.Context(), "pay.api", struct{}{}, queuemax.Opts{}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-failed:
		case <-time.After(30 * time.Second):
			t.Fatal("the failing job did not fail")
		}
		d := setup(t, queuemax.Config{Dir: dir})
		held, err := d.c.Enqueue(t.Context(), "pay.api", struct{}{}, queuemax.Opts{})
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("/admin/", http.StripPrefix("/admin", queuemaxhttp.NewHandler(d.c, queuemaxhttp.Options{})))
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		tab := newTab(t, browser)
		do(t, tab, "open the overview", chromedp.Navigate(srv.URL+"/admin/ui/"))
		waitJS(t, tab, `document.querySelector('#tasks tr[data-task="pay.api"]')?.textContent.includes("open")`, textOf("#tasks"))
		waitJS(t, tab, `document.querySelector('#breakers tr[data-task="pay.api"]')?.textContent.includes("open")`, textOf("#breakers"))
		waitJS(t, tab, `document.querySelector("#breakers").textContent.includes("payments API: 503")`, textOf("#breakers"))
		do(t, tab, "open the held job", chromedp.Navigate(srv.URL+"/admin/ui/#/jobs/"+held.String()))
		waitJS(t, tab, `document.querySelector("#job-held")?.textContent.includes("circuit breaker of task pay.api is open until")`, textOf("#view"))
	})
}
