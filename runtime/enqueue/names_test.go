package enqueue

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
)

// TestNames_Resolve checks the order of task-name resolution: a handler's
// name, alias, import-path form or short name; then the catalogue, read
// again for a name it does not know; then ErrUnknownTask with the near
// matches, unless unknown names are allowed.
func TestNames_Resolve(t *testing.T) {
	t.Parallel()
	reads := 0
	cat := []CatalogEntry{{Name: "billing.Charge", Aliases: []string{"billing.OldCharge"}}}
	n := &Names{
		Handlers: map[string][]string{"mail.Send": {"mail.Post"}, "mail.Bounce": nil},
		Claimed:  []string{"mail.Bounce", "mail.Send"},
		Refresh:  time.Hour,
		Catalog: func(context.Context) ([]CatalogEntry, error) {
			reads++
			return cat, nil
		},
	}
	ctx := t.Context()
	for name, want := range map[string]string{
		"mail.Send":                  "mail.Send",
		"mail.Post":                  "mail.Send", // alias
		"example.com/app/mail.Send":  "mail.Send", // import-path form
		"Bounce":                     "mail.Bounce",
		"billing.Charge":             "billing.Charge",
		"billing.OldCharge":          "billing.Charge",
		"Charge":                     "billing.Charge",
		"example.com/billing.Charge": "billing.Charge",
	} {
		if got, err := n.Resolve(ctx, name, false, false); err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	if got, _ := n.Resolve(ctx, "any.Name", true, false); got != "any.Name" {
		t.Errorf("a typed enqueue's name was changed to %q", got)
	}
	before := reads
	cat = append(cat, CatalogEntry{Name: "fresh.Task"})
	if got, err := n.Resolve(ctx, "fresh.Task", false, false); err != nil || got != "fresh.Task" || reads != before+1 {
		t.Errorf("a task published since the last read: %q, %v after %d reads; want it after one more read", got, err, reads-before)
	}
	_, err := n.Resolve(ctx, "mail.Sned", false, false)
	if !errors.Is(err, queuemaxtype.ErrUnknownTask) || !strings.Contains(err.Error(), `did you mean "mail.Send"`) {
		t.Errorf("a misspelt name: %v; want ErrUnknownTask suggesting mail.Send", err)
	}
	if got, err := n.Resolve(ctx, "mail.Sned", false, true); err != nil || got != "mail.Sned" {
		t.Errorf("an allowed unknown name: %q, %v", got, err)
	}
	n.Handlers["a.Send"] = nil
	n.Claimed = append(n.Claimed, "a.Send")
	if _, err := n.Resolve(ctx, "Send", false, false); !errors.Is(err, queuemaxtype.ErrUnknownTask) || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("a short name of two handlers: %v; want ambiguous", err)
	}
}
