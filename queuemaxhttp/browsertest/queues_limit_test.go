package browsertest

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/queuemax/queuemax"
)

// testQueueLimitsUI: the queues panel's Limits… button sets a queue's
// global limits (the prompt answered "50/s 4"), and the row shows them
// with their use.
func testQueueLimitsUI(t *testing.T, browser context.Context) {
	f := newDashFixture(t, adminTestToken)
	tab := newTab(t, browser)
	do(t, tab, "open the overview", chromedp.Navigate(f.url))
	do(t, tab, "enter the token", chromedp.SendKeys("#token", adminTestToken), chromedp.Click(`#token-form button`))
	waitJS(t, tab, `document.querySelector("#queue-limits-default") !== null`, textOf("#queues"))
	do(t, tab, "answer the limits prompt", chromedp.Evaluate[chromedp.Void](`window.prompt = () => "50/s 4"`))
	do(t, tab, "set the default queue's limits", chromedp.Click("#queue-limits-default"))
	waitJS(t, tab, `document.querySelector("#flash")?.textContent.startsWith("Queue default: limits set")`, textOf("#flash"))
	want := queuemax.QueueLimits{Rate: queuemax.Rate{Limit: 50, Per: time.Second}, Concurrency: 4}
	if qs, err := f.c.Queues(t.Context()); err != nil || len(qs) == 0 || qs[0].Limits != want {
		t.Errorf("after the limits button: Queues = %+v, %v; want default with %+v", qs, err, want)
	}
	waitJS(t, tab, `document.querySelector("#queues tr[data-queue=default]")?.textContent.includes("started 0/50 per 1s, running 0/4")`, textOf("#queues"))
}
