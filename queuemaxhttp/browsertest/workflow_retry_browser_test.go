package browsertest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxhttp"
)

// TestWorkflowRetryBrowser: a failed workflow's page offers "Retry
// workflow"; pressing it (with the token) puts the failed step back to
// pending and the step it cancelled back to waiting, and the button goes.
func TestWorkflowRetryBrowser(t *testing.T) {
	browser := newBrowser(t)
	var hs []queuemax.Handler
	for _, n := range []string{"shop.charge", "shop.ship"} {
		hs = append(hs, queuemax.Handler{Name: n, Func: func(context.Context, *queuemax.Job) (any, error) { return nil, nil }})
	}
	b := setup(t, queuemax.Config{Shards: 1, Handlers: hs})
	wf := queuemax.NewWorkflow("order-9")
	if err := wf.Add("charge", "shop.charge", map[string]any{"order": 9}); err != nil {
		t.Fatal(err)
	}
	if err := wf.Add("ship", "shop.ship", map[string]any{"order": 9}, queuemax.After("charge")); err != nil {
		t.Fatal(err)
	}
	id, err := b.c.EnqueueWorkflow(b.ctx, wf)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := b.c.Claim(b.ctx, "w1", 1)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Claim = %v, %v", jobs, err)
	}
	if _, err := b.c.Fail(b.ctx, jobs[0], queuemax.Permanent(errors.New("card declined"))); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", queuemaxhttp.NewHandler(b.c, queuemaxhttp.Options{Token: adminTestToken})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	tab := newTab(t, browser)
	loaded := `document.querySelector("#view").dataset.loaded === location.hash`
	do(t, tab, "open the failed workflow", chromedp.Navigate(fmt.Sprintf("%s/admin/ui/#/workflows/%d", srv.URL, id)))
	waitJS(t, tab, loaded+` && `+graphNodesJS+" === "+jsString("charge=failed ship=cancelled"), graphNodesJS)
	waitJS(t, tab, textIs("#wf-status", "failed")+` && !document.querySelector("#wf-cancel")`, textOf("#wf-status"))
	do(t, tab, "enter the token", chromedp.SendKeys("#token", adminTestToken), chromedp.Click(`#token-form button`))
	waitJS(t, tab, textIs("#mode", "unlocked")+` && `+loaded+` && !!document.querySelector("#wf-retry")`, textOf("#mode"))
	do(t, tab, "retry the workflow", chromedp.Click("#wf-retry"))
	waitJS(t, tab, graphNodesJS+" === "+jsString("charge=pending ship=waiting"), graphNodesJS)
	waitJS(t, tab, textIs("#wf-status", "running")+` && !document.querySelector("#wf-retry") && !!document.querySelector("#wf-cancel")`, textOf("#wf-status"))
	info, err := b.c.Workflow(b.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != queuemax.WorkflowRunning || info.Steps[0].Status != queuemax.StatusPending || info.Steps[1].Status != queuemax.StepWaiting {
		t.Errorf("after the dashboard's retry: %s %+v", info.Status, info.Steps)
	}
	screenshot(t, tab, "workflow-retried")
}
