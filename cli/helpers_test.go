package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/queuemax/queuemax"
)

func TestResolveTask(t *testing.T) {
	t.Parallel()
	h := func(name string) queuemax.Handler { return queuemax.Handler{Name: name} }
	handlers := []queuemax.Handler{h("example.com/a/tasks.SendEmail"), h("example.com/b/jobs.SendEmail"), h("example.com/a/tasks.Report")}
	tests := []struct {
		in       string
		want     string
		wantOK   bool
		wantErr  bool
		handlers []queuemax.Handler
	}{
		{in: "example.com/a/tasks.Report", want: "example.com/a/tasks.Report", wantOK: true},
		{in: "tasks.Report", want: "example.com/a/tasks.Report", wantOK: true},
		{in: "Report", want: "example.com/a/tasks.Report", wantOK: true},
		{in: "jobs.SendEmail", want: "example.com/b/jobs.SendEmail", wantOK: true},
		{in: "SendEmail", wantErr: true}, // in two packages
		{in: "Nope", want: "Nope"},
		{in: "", want: ""},
	}
	for _, tt := range tests {
		got, ok, err := resolveTask(handlers, tt.in)
		if got != tt.want || ok != tt.wantOK || (err != nil) != tt.wantErr {
			t.Errorf("resolveTask(%q) = %q, %v, %v; want %q, %v, error %v", tt.in, got, ok, err, tt.want, tt.wantOK, tt.wantErr)
		}
	}
}

func TestFormatting(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct{ got, want string }{
		{ago(time.Time{}, now), "-"},
		{ago(now.Add(-90*time.Second), now), "1m30s ago"},
		{ago(now.Add(26*time.Hour), now), "in 26h00m"},
		{ago(now.Add(-100*time.Hour), now), "4d04h ago"},
		{roughDuration(500 * time.Millisecond), "0s"},
		{bar(0, 4, 8), "[>       ]   0%"},
		{bar(2, 4, 8), "[====>   ]  50%"},
		{bar(4, 4, 8), "[========] 100%"},
		{bar(0, 0, 4), "[====] 100%"},
		{cutLine("abcdé", 4), "abcd"},
		{cutLine("abc", 4), "abc"},
		{clip("a\nb  c", 10), "a b c"},
		{clip("abcdefghij", 5), "abcd…"},
		{shortTask("example.com/a/tasks.Report"), "tasks.Report"},
		{shortTask(""), "-"},
		{didYouMean("stast"), ` (did you mean "stats"?)`},
		{didYouMean("zzzzzzzz"), ""},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestPGTarget(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ dsn, schema, want string }{
		{"postgres://postgres:secret@127.0.0.1:5432/test?sslmode=disable", "jobs", "PostgreSQL 127.0.0.1:5432/test, schema jobs"},
		{"host=db port=6432 dbname=app user=u password=secret", "", "PostgreSQL db:6432/app, schema queuemax"},
	} {
		if got := pgTarget(tt.dsn, tt.schema); got != tt.want || strings.Contains(got, "secret") {
			t.Errorf("pgTarget(%q) = %q, want %q", tt.dsn, got, tt.want)
		}
	}
}
