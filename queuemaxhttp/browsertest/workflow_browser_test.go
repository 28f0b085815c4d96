package browsertest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxhttp"
)

// wfDash is a workflow of five steps with a fan-out, a fan-in, a bound
// result and an AfterSettled step, whose jobs were claimed and completed
// by hand (no worker runs, so nothing changes under the test):
//
//	charge (completed) ─┬→ ship (completed) ─┐
//	                    └→ invoice (scheduled)┴→ mail (waiting; receipt ← charge) ⇢ audit (waiting)
type wfDash struct {
	c         *queuemax.Client
	url       string
	id        queuemax.WorkflowID
	chargeJob queuemax.JobID
}

func newWFDash(t *testing.T) *wfDash {
	t.Helper()
	var hs []queuemax.Handler
	for _, n := range []string{"shop.charge", "shop.ship", "shop.invoice", "shop.mail", "shop.audit"} {
		hs = append(hs, queuemax.Handler{Name: n, Func: func(context.Context, *queuemax.Job) (any, error) { return nil, nil }})
	}
	b := setup(t, queuemax.Config{Shards: 2, Handlers: hs})
	f := &wfDash{c: b.c}
	wf := queuemax.NewWorkflow("order-7")
	add := func(step, task string, opts ...queuemax.StepOption) {
		t.Helper()
		if err := wf.Add(step, task, map[string]any{"order": 7}, opts...); err != nil {
			t.Fatal(err)
		}
	}
	add("charge", "shop.charge")
	add("ship", "shop.ship", queuemax.After("charge"))
	add("invoice", "shop.invoice", queuemax.After("charge"), queuemax.StepOpts(queuemax.Opts{RunAt: time.Now().Add(time.Hour)}))
	add("mail", "shop.mail", queuemax.After("ship", "invoice"), queuemax.Bind("receipt", "charge"))
	add("audit", "shop.audit", queuemax.AfterSettled("mail"))
	var err error
	if f.id, err = b.c.EnqueueWorkflow(b.ctx, wf); err != nil {
		t.Fatal(err)
	}
	claim := func(task string, result any) queuemax.JobID {
		t.Helper()
		jobs, err := b.c.Claim(b.ctx, "w1", 1)
		if err != nil || len(jobs) != 1 || jobs[0].Task != task {
			t.Fatalf("Claim = %v, %v; want one %s job", jobs, err, task)
		}
		if err := b.c.Complete(b.ctx, jobs[0], result); err != nil {
			t.Fatal(err)
		}
		return jobs[0].ID
	}
	f.chargeJob = claim("shop.charge", map[string]string{"number": "R-7"})
	claim("shop.ship", map[string]string{"tracking": "PK-7"})

	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", queuemaxhttp.NewHandler(f.c, queuemaxhttp.Options{Token: adminTestToken})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f.url = srv.URL + "/admin/ui/"
	return f
}

// graphNodesJS and graphEdgesJS are JS expressions: the graph's nodes
// (step=status, in the order added) and edges (from>to:kind, sorted),
// joined with spaces.
const graphNodesJS = `[...document.querySelectorAll("#wf-graph g.wf-node")].map(g => g.dataset.step + "=" + g.dataset.status).join(" ")`
const graphEdgesJS = `[...document.querySelectorAll("#wf-graph path.wf-edge")].map(p => p.dataset.from + ">" + p.dataset.to + ":" + p.dataset.kind).sort().join(" ")`

func TestWorkflowBrowser(t *testing.T) {
	browser := newBrowser(t)
	f := newWFDash(t)
	tab := newTab(t, browser)
	loaded := `document.querySelector("#view").dataset.loaded === location.hash`

	// The overview counts it as running and links to the running ones.
	do(t, tab, "open the overview", chromedp.Navigate(f.url))
	waitJS(t, tab, textIs("#count-workflows .n", "1"), textOf("#status-cards"))
	do(t, tab, "open the running workflows", chromedp.Click("#count-workflows"))
	waitJS(t, tab, `location.hash === "#/workflows?status=running" && `+loaded+` && document.querySelectorAll("#wf-list tr[data-workflow]").length === 1`, textOf("#wf-list"))

	// The list links to the workflow.
	do(t, tab, "open the workflow list", chromedp.Navigate(f.url+"#/workflows"))
	row := fmt.Sprintf(`#wf-list tr[data-workflow="%d"]`, f.id)
	waitJS(t, tab, loaded+` && `+textIs(row+" td:nth-child(3)", "running"), textOf("#wf-list"))
	waitJS(t, tab, textIs(row+" td:nth-child(2)", "order-7"), textOf(row))
	do(t, tab, "open the workflow", chromedp.Click(row+" a"))

	// One node per step coloured by its state, one edge per dependency.
	waitJS(t, tab, fmt.Sprintf(`location.hash === "#/workflows/%d" && %s === %s`, f.id, graphNodesJS,
		jsString("charge=completed ship=completed invoice=scheduled mail=waiting audit=waiting")), graphNodesJS)
	waitJS(t, tab, graphEdgesJS+" === "+jsString(strings.Join([]string{
		"charge>invoice:after", "charge>mail:bind", "charge>ship:after", "invoice>mail:after", "mail>audit:settled", "ship>mail:after"}, " ")), graphEdgesJS)
	waitJS(t, tab, textIs("#wf-status", "running"), textOf("#wf-status"))
	// Columns by dependency depth: charge 0, ship and invoice 1, mail 2,
	// audit 3; each node's rectangle has the class of its state.
	xs, err := chromedp.Run(tab, chromedp.Evaluate[map[string]float64](`Object.fromEntries([...document.querySelectorAll("#wf-graph g.wf-node")].map(g =>
		[g.dataset.step, g.transform.baseVal.consolidate().matrix.e]))`))
	if err != nil {
		t.Fatal(err)
	}
	if !(xs["charge"] < xs["ship"] && xs["ship"] == xs["invoice"] && xs["invoice"] < xs["mail"] && xs["mail"] < xs["audit"]) {
		t.Errorf("node columns %v, want charge < ship = invoice < mail < audit", xs)
	}
	waitJS(t, tab, `getComputedStyle(document.querySelector('#wf-graph g[data-step="charge"] rect')).fill !== getComputedStyle(document.querySelector('#wf-graph g[data-step="mail"] rect')).fill`, "")
	// The table repeats the binding.
	waitJS(t, tab, textIs(`tr[data-step="mail"] td:nth-child(5)`, "receipt ← charge"), textOf(`tr[data-step="mail"]`))
	screenshot(t, tab, "workflow")

	// A step's job page links back to the workflow, outlining the step.
	do(t, tab, "open the charge node's job", chromedp.Click(`#wf-graph a[href="#/jobs/`+f.chargeJob.String()+`"]`))
	waitJS(t, tab, loaded+` && `+textIs("#job-status", "completed"), textOf("#job-status"))
	do(t, tab, "follow the job's workflow link", chromedp.Click("#job-workflow"))
	waitJS(t, tab, `document.querySelector("#wf-graph g.wf-node.current")?.dataset.step === "charge"`,
		`[...document.querySelectorAll("#wf-graph g.current")].map(g => g.dataset.step)`)

	// Cancelling with the token cancels every step not ended.
	do(t, tab, "enter the token", chromedp.SendKeys("#token", adminTestToken), chromedp.Click(`#token-form button`))
	waitJS(t, tab, textIs("#mode", "unlocked")+` && `+loaded+` && !!document.querySelector("#wf-cancel")`, textOf("#mode"))
	do(t, tab, "cancel the workflow", chromedp.Click("#wf-cancel"))
	waitJS(t, tab, graphNodesJS+" === "+jsString("charge=completed ship=completed invoice=cancelled mail=cancelled audit=cancelled"), graphNodesJS)
	waitJS(t, tab, textIs("#wf-status", "cancelled")+` && !document.querySelector("#wf-cancel")`, textOf("#wf-status"))
	info, err := f.c.Workflow(t.Context(), f.id)
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != queuemax.WorkflowCancelled {
		t.Errorf("after the dashboard's cancel: workflow %s, want cancelled", info.Status)
	}
	screenshot(t, tab, "workflow-cancelled")

	// An unknown workflow says so.
	do(t, tab, "open an unknown workflow", chromedp.Navigate(f.url+"#/workflows/"+strconv.FormatInt(int64(queuemax.NewWorkflowID(0, 999)), 10)))
	waitJS(t, tab, `!!document.querySelector("#wf-gone")`, textOf("#view"))
}
