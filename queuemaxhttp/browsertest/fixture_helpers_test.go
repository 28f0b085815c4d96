package browsertest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/queuemax/queuemax"
)

func idList(ids ...queuemax.JobID) string {
	ss := make([]string, len(ids))
	for i, id := range ids {
		ss[i] = id.String()
	}
	slices.Sort(ss) // as the page's rows are sorted: as strings
	return strings.Join(ss, ",")
}

func deadLetterOf(t *testing.T, f *dashFixture, id queuemax.JobID) *queuemax.DeadLetter {
	t.Helper()
	dls, err := f.c.DeadLetters(t.Context(), queuemax.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(dls, func(d *queuemax.DeadLetter) bool { return d.OriginalJobID == id })
	if i < 0 {
		t.Fatalf("no dead letter for job %d", id)
	}
	return dls[i]
}

// docsScreenshot fills the chart with a few minutes' worth of varied work,
// one batch per dashboard poll, and saves the overview as the README's
// screenshot.
func docsScreenshot(t *testing.T, f *dashFixture, tab context.Context, out string) {
	prev := ""
	for i := range 30 {
		var jobs []queuemax.EnqueueParams
		for k := range 3 + (i*7)%9 {
			jobs = append(jobs, queuemax.EnqueueParams{Task: "mail.send", Payload: map[string]any{"to": fmt.Sprintf("user%d@example.com", k), "flaky": k%4 == 0}})
		}
		if i%5 == 2 {
			jobs = append(jobs, queuemax.EnqueueParams{Task: "report.build", Payload: map[string]any{"report": "daily", "corrupt": true}})
		}
		if _, err := f.c.EnqueueMany(t.Context(), jobs); err != nil {
			t.Fatal(err)
		}
		// Wait for the next poll of the page before the next batch.
		waitJS(t, tab, fmt.Sprintf(`document.querySelector("#updated").textContent !== %s`, jsString(prev)), "")
		v, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.querySelector("#updated").textContent`))
		if err != nil {
			t.Fatal(err)
		}
		prev = v
	}
	deadline := time.Now().Add(45 * time.Second)
	for {
		s, err := f.c.Stats(t.Context())
		if err == nil && s.Processing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queue did not settle: Stats = %+v, %v", s, err)
		}
		if _, err := chromedp.Run(tab, chromedp.Evaluate[chromedp.Void](`0`)); err != nil { // a round trip, not a sleep
			t.Fatal(err)
		}
	}
	waitJS(t, tab, fmt.Sprintf(`document.querySelector("#updated").textContent !== %s`, jsString(prev)), "")
	png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("docs screenshot: %s (%d KB)", out, len(png)/1024)
}
