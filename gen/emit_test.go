package gen

import (
	"bytes"
	"go/format"
	"strings"
	"testing"
	"time"

	"github.com/dave/jennifer/jen"
	"github.com/google/go-cmp/cmp"

	"github.com/queuemax/queuemax/annotations"
)

func TestEmit(t *testing.T) {
	t.Parallel()
	str := typeRef{Kind: refBasic, Name: "string"}
	tests := []struct {
		name    string
		model   pkgModel
		want    []string // lines (trimmed) that must appear, in order
		wantNot []string // substrings that must not appear
	}{
		{
			name: "NoParamsHasNoMap",
			model: pkgModel{Path: "example.com/p", Name: "p", Tasks: []taskSpec{
				{Func: "Ping", Name: "p.Ping", File: "ping.go", Line: 3},
			}},
			want: []string{
				"// PingArgs is the payload of Ping (ping.go).",
				"type PingArgs struct{}",
				"var pingOptions = queuemax.TaskOptions{}",
				"func (t PingTask) Delay(ctx context.Context) (queuemax.JobID, error) {",
				"return t.task.Enqueue(ctx, PingArgs{})",
				"var _ func(context.Context) error = Ping",
			},
			wantNot: []string{") Map(", ") Result("},
		},
		{
			name: "UniqueTaskGetsResultMethods",
			model: pkgModel{Path: "example.com/p", Name: "p", Tasks: []taskSpec{{
				Func: "Sync", Name: "p.Sync", File: "s.go", Line: 2,
				Params:       []param{{Name: "to", Local: "to", Field: "To", JSON: "to", Type: str}},
				Unique:       "args",
				UniqueFor:    time.Hour,
				UniqueStates: []string{"pending", "scheduled", "processing", "completed"},
			}}},
			want: []string{
				"Unique: queuemax.UniqueOpts{",
				"ByArgs:   true,",
				"ByPeriod: time.Hour,",
				"ByState:  []queuemax.Status{queuemax.StatusPending, queuemax.StatusScheduled, queuemax.StatusProcessing, queuemax.StatusCompleted},",
				"func (t SyncTask) DelayResult(ctx context.Context, to string) (queuemax.EnqueueResult, error) {",
				"return t.task.EnqueueResult(ctx, SyncArgs{To: to})",
				"func (t SyncTask) MapArgsResults(ctx context.Context, args []SyncArgs) ([]queuemax.EnqueueResult, error) {",
			},
		},
		{
			name: "PlainTaskHasNoResultMethods",
			model: pkgModel{Path: "example.com/p", Name: "p", Tasks: []taskSpec{
				{Func: "Ping", Name: "p.Ping", File: "ping.go", Line: 3},
			}},
			wantNot: []string{"Unique:", ") DelayResult(", ") MapArgsResults("},
		},
		{
			name: "OptionsAndDurations",
			model: pkgModel{Path: "example.com/p", Name: "p", Tasks: []taskSpec{{
				Func: "Send", Name: "p.Send", File: "a.go", Line: 1,
				Params:     []param{{Name: "to", Local: "to", Field: "To", JSON: "to", Type: str}},
				Priority:   2,
				Retries:    new(int),
				Timeout:    90 * time.Minute,
				RetryDelay: 1500 * time.Millisecond,
				RateLimit:  annotations.Rate{Limit: 10, Per: time.Second},
				RetryOn: []errorMatch{
					{Path: "io", Name: "EOF"},
					{Path: "net", Name: "OpError", Type: true, Pointer: true},
					{Path: "example.com/p", Name: "ErrBusy"},
				},
				InlineRetries: 4,
			}}},
			want: []string{
				"Priority:   2,",
				"MaxRetries: queuemax.Ptr(0),",
				"Timeout:    90 * time.Minute,",
				"RetryDelay: 1500 * time.Millisecond,",
				"RateLimit: queuemax.Rate{",
				"Limit: 10,",
				"Per:   time.Second,",
				"return errors.Is(err, io.EOF) ||",
				"errors.As(err, new(*net.OpError)) ||",
				"errors.Is(err, ErrBusy)",
				"InlineRetries: 4,",
				"func (t SendTask) Map(ctx context.Context, to []string) ([]queuemax.JobID, error) {",
			},
		},
		{
			name: "ResultTaskUsesCallResultAndResult",
			model: pkgModel{Path: "example.com/p", Name: "p", Tasks: []taskSpec{{
				Func: "Report", Name: "p.Report", File: "r.go", Line: 9,
				Result: &typeRef{Kind: refPointer, Elem: &typeRef{Kind: refNamed, Path: "example.com/p", Name: "Out"}},
			}}},
			want: []string{
				"queuemax.DefineResult(\"p.Report\", reportOptions, reportFunc),",
				"func reportFunc(ctx context.Context, a ReportArgs) (*Out, error) {",
				"return queuemax.CallResult(ctx, reportOptions, reportFunc, ReportArgs{})",
				"func (t ReportTask) Result(ctx context.Context, id queuemax.JobID) (*Out, error) {",
				"return queuemax.Result[*Out](ctx, t.Client(), id)",
				"var _ func(context.Context) (*Out, error) = Report",
			},
		},
		{
			name: "PeriodicHandlers",
			model: pkgModel{Path: "example.com/p", Name: "p", Tasks: []taskSpec{
				{Func: "Clean", Name: "p.Clean", File: "c.go", Line: 1, Periodic: true, Every: time.Hour},
				{Func: "Nightly", Name: "p.Nightly", File: "c.go", Line: 5, Periodic: true, Cron: "CRON_TZ=UTC 0 3 * * *"},
			}},
			want: []string{
				"cleanHandler := queuemax.Define(\"p.Clean\", cleanOptions, cleanFunc)",
				"cleanHandler.Periodic = &queuemax.Periodic{Every: time.Hour}",
				"nightlyHandler.Periodic = &queuemax.Periodic{Cron: \"CRON_TZ=UTC 0 3 * * *\"}",
				"cleanHandler,",
				"nightlyHandler,",
			},
		},
		{
			name: "ImportNamesFromModel",
			model: pkgModel{
				Path: "example.com/p", Name: "p",
				Imports: []importSpec{{Path: "gopkg.in/yaml.v3", Name: "yaml"}},
				Tasks: []taskSpec{{
					Func: "Parse", Name: "p.Parse", File: "y.go", Line: 2,
					Params: []param{{Name: "doc", Local: "doc", Field: "Doc", JSON: "doc", Type: typeRef{Kind: refNamed, Path: "gopkg.in/yaml.v3", Name: "Node"}}},
				}},
			},
			want: []string{
				"\"gopkg.in/yaml.v3\"",
				"Doc yaml.Node `json:\"doc\"`",
			},
			wantNot: []string{"yamlv3"},
		},
		{
			name:  "NoTasks",
			model: pkgModel{Path: "example.com/p", Name: "p"},
			want: []string{
				"type Tasks struct{}",
				"return &Tasks{}",
				"return nil",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := emit(tt.model)
			if err != nil {
				t.Fatalf("emit: %v", err)
			}
			if !bytes.HasPrefix(got, []byte("// "+header+"\n\npackage "+tt.model.Name+"\n")) {
				t.Errorf("emit output does not start with the header and package clause:\n%s", got)
			}
			formatted, err := format.Source(got)
			if err != nil {
				t.Fatalf("format.Source: %v\n%s", err, got)
			}
			if diff := cmp.Diff(string(formatted), string(got)); diff != "" {
				t.Errorf("emit output is not gofmt-clean (-gofmt +got):\n%s", diff)
			}
			again, err := emit(tt.model)
			if err != nil || !bytes.Equal(got, again) {
				t.Errorf("second emit differs (err %v)", err)
			}
			lines := strings.Split(string(got), "\n")
			i := 0
			for _, w := range tt.want {
				for i < len(lines) && strings.TrimSpace(lines[i]) != w {
					i++
				}
				if i == len(lines) {
					t.Errorf("emit output lacks line %q (in order); output:\n%s", w, got)
					break
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(string(got), w) {
					t.Errorf("emit output contains %q; output:\n%s", w, got)
				}
			}
		})
	}
}

func TestDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   time.Duration
		want string
	}{
		{time.Hour, "time.Hour"},
		{90 * time.Minute, "90 * time.Minute"},
		{30 * time.Second, "30 * time.Second"},
		{1500 * time.Millisecond, "1500 * time.Millisecond"},
		{time.Microsecond, "time.Microsecond"},
		{7, "7 * time.Nanosecond"},
	}
	for _, tt := range tests {
		got := renderCode(t, duration(tt.in))
		if got != tt.want {
			t.Errorf("duration(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// renderCode renders one expression as "var _ = <expr>" and returns the
// expression.
func renderCode(t *testing.T, c jen.Code) string {
	t.Helper()
	s := jen.Var().Id("_").Op("=").Add(c)
	var buf bytes.Buffer
	if err := s.Render(&buf); err != nil {
		t.Fatalf("render: %v", err)
	}
	return strings.TrimPrefix(strings.TrimSpace(buf.String()), "var _ = ")
}

// TestEmit_SourceLinesDoNotMatter: a comment line added above a task moves
// it down, and the generated file must stay the same (queuemax-gen -check
// would call it stale otherwise).
func TestEmit_SourceLinesDoNotMatter(t *testing.T) {
	t.Parallel()
	str := typeRef{Kind: refBasic, Name: "string"}
	model := func(line int) pkgModel {
		return pkgModel{Path: "example.com/p", Name: "p", Tasks: []taskSpec{
			{Func: "Mail", Name: "p.Mail", File: "mail.go", Line: line, Params: []param{{Name: "to", Local: "to", Field: "To", JSON: "to", Type: str}}},
		}}
	}
	a, err := emit(model(12))
	if err != nil {
		t.Fatal(err)
	}
	b, err := emit(model(13))
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Errorf("the output depends on the task's line:\n%s", cmp.Diff(string(a), string(b)))
	}
	if !strings.Contains(string(a), "(mail.go)") {
		t.Errorf("the output does not name the source file:\n%s", a)
	}
}
