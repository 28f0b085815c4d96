package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/mattn/go-isatty"
	"github.com/queuemax/queuemax/internal/jsonview"
)

// isTerminal reports whether v is an *os.File open on a terminal.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	fd := f.Fd()
	return isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd)
}

// writeJSON writes v indented, with a final newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		c = strings.ReplaceAll(c, "\t", " ")
		if i > 0 {
			io.WriteString(t.tw, "\t")
		}
		io.WriteString(t.tw, c)
	}
	io.WriteString(t.tw, "\n")
}

func (t *table) flush() error { return t.tw.Flush() }

// clip returns s on one line, cut to n runes with an ellipsis.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// shortTask returns a task name without its import path:
// "example.com/app/tasks.SendEmail" becomes "tasks.SendEmail".
func shortTask(name string) string {
	if name == "" {
		return "-"
	}
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// ago formats t relative to now: "3m ago", "in 12s", or "-" for zero.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	if d >= 0 {
		return roughDuration(d) + " ago"
	}
	return "in " + roughDuration(-d)
}

// roughDuration formats d with at most two units: 45s, 3m12s, 2h5m, 3d4h.
func roughDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

// stamp formats t in UTC to the second, or "-" for zero.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// timePtr returns nil for a zero time, for JSON fields that are omitted
// when unset, and the time in UTC otherwise.
func timePtr(t time.Time) *time.Time { return jsonview.Time(t) }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// progress draws a progress bar on a terminal, updated in place, and
// plain lines at most every interval elsewhere.
type progress struct {
	w        io.Writer
	tty      bool
	interval time.Duration
	last     time.Time
	drawn    bool
}

func newProgress(w io.Writer, interval time.Duration) *progress {
	return &progress{w: w, tty: isTerminal(w), interval: interval}
}

// ttyWidth is the widest line drawn in place: a longer one would wrap on
// an 80-column terminal, and a carriage return cannot go back over a wrap.
const ttyWidth = 79

// cutLine cuts s to n runes.
func cutLine(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// update shows done of total with a trailing note. force prints a plain
// line even if the interval has not passed.
func (p *progress) update(done, total int64, note string, force bool) {
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", cutLine(bar(done, total, 20)+" "+note, ttyWidth))
		p.drawn = true
		return
	}
	if now := time.Now(); force || now.Sub(p.last) >= p.interval {
		p.last = now
		fmt.Fprintf(p.w, "%s  %s\n", now.Format("15:04:05"), note)
	}
}

// line shows a status line: in place on a terminal (cut to ttyWidth),
// otherwise as a plain line with the time at most every interval (or at
// once if force).
func (p *progress) line(s string, force bool) {
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", cutLine(s, ttyWidth))
		p.drawn = true
		return
	}
	if now := time.Now(); force || now.Sub(p.last) >= p.interval {
		p.last = now
		fmt.Fprintf(p.w, "%s  %s\n", now.Format("15:04:05"), s)
	}
}

// done ends the line drawn in place, if any.
func (p *progress) done() {
	if p.tty && p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

// bar returns "[=====>     ]  45%".
func bar(done, total int64, width int) string {
	if total <= 0 {
		total, done = 1, 1
	}
	done = min(max(done, 0), total)
	full := int(done * int64(width) / total)
	s := strings.Repeat("=", full)
	if full < width {
		s += ">" + strings.Repeat(" ", width-full-1)
	}
	return fmt.Sprintf("[%s] %3d%%", s, done*100/total)
}
