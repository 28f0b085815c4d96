package annotations_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/queuemax/queuemax/annotations"
)

func ptr(n int) *int { return &n }

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    *annotations.Directive
		wantErr []string // "offset: message"
	}{
		{
			name: "BareTask",
			in:   "//queuemax:task",
			want: &annotations.Directive{Kind: annotations.KindTask},
		},
		{
			name: "AllTaskKeys",
			in:   `//queuemax:task name=mail.send priority=2 retries=5 timeout=30s retry_delay=1m30s rate_limit=10/s retry_on=io.ErrUnexpectedEOF,*net.OpError,ErrBusy inline_retries=4`,
			want: &annotations.Directive{
				Kind:       annotations.KindTask,
				Name:       "mail.send",
				Priority:   ptr(2),
				Retries:    ptr(5),
				Timeout:    30 * time.Second,
				RetryDelay: 90 * time.Second,
				RateLimit:  annotations.Rate{Limit: 10, Per: time.Second},
				RetryOn: []annotations.ErrorRef{
					{Pkg: "io", Name: "ErrUnexpectedEOF", Offset: 107},
					{Pointer: true, Pkg: "net", Name: "OpError", Offset: 127},
					{Name: "ErrBusy", Offset: 140},
				},
				InlineRetries: 4,
			},
		},
		{
			name: "ExplicitZeroRetries",
			in:   "//queuemax:task retries=0",
			want: &annotations.Directive{Kind: annotations.KindTask, Retries: ptr(0)},
		},
		{
			name: "TabsAndExtraSpaces",
			in:   "//queuemax:task\tpriority=1   timeout=2h ",
			want: &annotations.Directive{Kind: annotations.KindTask, Priority: ptr(1), Timeout: 2 * time.Hour},
		},
		{
			name: "RateLimitUnits",
			in:   "//queuemax:task rate_limit=100/m",
			want: &annotations.Directive{Kind: annotations.KindTask, RateLimit: annotations.Rate{Limit: 100, Per: time.Minute}},
		},
		{
			name: "RateLimitHour",
			in:   "//queuemax:task rate_limit=1000/h",
			want: &annotations.Directive{Kind: annotations.KindTask, RateLimit: annotations.Rate{Limit: 1000, Per: time.Hour}},
		},
		{
			name: "RateLimitDuration",
			in:   "//queuemax:task rate_limit=5/30s",
			want: &annotations.Directive{Kind: annotations.KindTask, RateLimit: annotations.Rate{Limit: 5, Per: 30 * time.Second}},
		},
		{
			name: "QuotedName",
			in:   `//queuemax:task name="billing.charge"`,
			want: &annotations.Directive{Kind: annotations.KindTask, Name: "billing.charge"},
		},
		{
			name: "PeriodicEvery",
			in:   "//queuemax:periodic every=1h priority=0",
			want: &annotations.Directive{Kind: annotations.KindPeriodic, Every: time.Hour, Priority: ptr(0)},
		},
		{
			name: "PeriodicCron",
			in:   `//queuemax:periodic cron="0 3 * * *"`,
			want: &annotations.Directive{Kind: annotations.KindPeriodic, Cron: "0 3 * * *"},
		},
		{
			name: "PeriodicCronBackquoted",
			in:   "//queuemax:periodic cron=`30 * * * *`",
			want: &annotations.Directive{Kind: annotations.KindPeriodic, Cron: "30 * * * *"},
		},
		{
			name: "PeriodicCronDescriptor",
			in:   "//queuemax:periodic cron=@hourly",
			want: &annotations.Directive{Kind: annotations.KindPeriodic, Cron: "@hourly"},
		},
		{
			name: "PeriodicCronEvery",
			in:   `//queuemax:periodic cron="@every 90m"`,
			want: &annotations.Directive{Kind: annotations.KindPeriodic, Cron: "@every 90m"},
		},
		{
			name: "PeriodicCronTimeZone",
			in:   `//queuemax:periodic cron="CRON_TZ=Europe/Paris 0 3 * * *"`,
			want: &annotations.Directive{Kind: annotations.KindPeriodic, Cron: "CRON_TZ=Europe/Paris 0 3 * * *"},
		},
		{
			name:    "UnknownKeySuggestion",
			in:      "//queuemax:task priorty=2",
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`16: queuemax:task: unknown key "priorty" (did you mean "priority"?)`},
		},
		{
			name:    "UnknownKeyNoSuggestion",
			in:      "//queuemax:task colour=red",
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`16: queuemax:task: unknown key "colour"`},
		},
		{
			name:    "PeriodicKeyOnTask",
			in:      "//queuemax:task every=1h",
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`16: queuemax:task: key "every" is only valid in queuemax:periodic`},
		},
		{
			name:    "DuplicateKey",
			in:      "//queuemax:task priority=1 priority=2",
			want:    &annotations.Directive{Kind: annotations.KindTask, Priority: ptr(1)},
			wantErr: []string{`27: queuemax:task: duplicate key "priority"`},
		},
		{
			name:    "PriorityOutOfRange",
			in:      "//queuemax:task priority=3",
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`25: queuemax:task: bad priority "3": want 0 (low), 1 (medium) or 2 (high)`},
		},
		{
			name:    "PriorityNotNumber",
			in:      "//queuemax:task priority=high",
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`25: queuemax:task: bad priority "high": want 0 (low), 1 (medium) or 2 (high)`},
		},
		{
			name:    "NegativeRetries",
			in:      "//queuemax:task retries=-1",
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`24: queuemax:task: bad retries "-1": want an integer from 0 to 1000`},
		},
		{
			name:    "RetriesAboveTheBound",
			in:      "//queuemax:task retries=1001",
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`24: queuemax:task: bad retries "1001": want an integer from 0 to 1000`},
		},
		{
			name: "CircuitOff",
			in:   "//queuemax:task circuit=off",
			want: &annotations.Directive{Kind: annotations.KindTask, CircuitOff: true},
		},
		{
			name:    "BadCircuit",
			in:      "//queuemax:task circuit=0",
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`24: queuemax:task: bad circuit "0": want off or on`},
		},
		{
			name: "Queue",
			in:   "//queuemax:task queue=emails",
			want: &annotations.Directive{Kind: annotations.KindTask, Queue: "emails"},
		},
		{
			name:    "BadQueue",
			in:      "//queuemax:task queue=Emails",
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`22: queuemax:task: bad queue "Emails": character 'E' at 0 (want a-z, 0-9, and _ - . after the first)`},
		},
		{
			name:    "QueueTypo",
			in:      "//queuemax:task queu=emails",
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`16: queuemax:task: unknown key "queu" (did you mean "queue"?)`},
		},
		{
			name: "Unique",
			in:   "//queuemax:task unique=args unique_for=1h unique_states=pending,scheduled,processing,completed",
			want: &annotations.Directive{Kind: annotations.KindTask, Unique: "args", UniqueFor: time.Hour,
				UniqueStates: []string{"pending", "scheduled", "processing", "completed"}},
		},
		{
			name: "UniqueForAlone",
			in:   "//queuemax:task unique_for=24h",
			want: &annotations.Directive{Kind: annotations.KindTask, UniqueFor: 24 * time.Hour},
		},
		{
			name:    "BadUnique",
			in:      "//queuemax:task unique=all",
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`23: queuemax:task: bad unique "all": want args (the arguments) or key (Opts.UniqueKey)`},
		},
		{
			name:    "UniqueForTooShort",
			in:      "//queuemax:task unique=key unique_for=10ms",
			want:    &annotations.Directive{Kind: annotations.KindTask, Unique: "key"},
			wantErr: []string{`38: queuemax:task: bad unique_for "10ms": want at least 1s`},
		},
		{
			name:    "UniqueStatesMissingRequired",
			in:      "//queuemax:task unique=key unique_states=pending,completed",
			want:    &annotations.Directive{Kind: annotations.KindTask, Unique: "key"},
			wantErr: []string{`41: queuemax:task: bad unique_states "pending,completed": must include pending, scheduled and processing (missing scheduled, processing)`},
		},
		{
			name:    "UniqueStatesUnknown",
			in:      "//queuemax:task unique=args unique_states=pending,scheduled,processing,complete",
			want:    &annotations.Directive{Kind: annotations.KindTask, Unique: "args"},
			wantErr: []string{`42: queuemax:task: bad unique_states "pending,scheduled,processing,complete": unknown status "complete" (did you mean "completed"?)`},
		},
		{
			name:    "UniqueStatesAlone",
			in:      "//queuemax:task unique_states=pending,scheduled,processing",
			want:    &annotations.Directive{Kind: annotations.KindTask, UniqueStates: []string{"pending", "scheduled", "processing"}},
			wantErr: []string{`16: queuemax:task: unique_states needs unique= or unique_for=`},
		},
		{
			name:    "UniqueOnPeriodic",
			in:      "//queuemax:periodic every=1h unique=args",
			want:    &annotations.Directive{Kind: annotations.KindPeriodic, Every: time.Hour},
			wantErr: []string{`29: queuemax:periodic: key "unique" is only valid in queuemax:task (a periodic slot fires once already)`},
		},
		{
			name: "Tags",
			in:   "//queuemax:task tags=billing,eu",
			want: &annotations.Directive{Kind: annotations.KindTask, Tags: []string{"billing", "eu"}},
		},
		{
			name:    "BadTags",
			in:      "//queuemax:task tags=ok,,x,x",
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`24: queuemax:task: bad tags "ok,,x,x": empty tag (write tags=a,b)`, `27: queuemax:task: duplicate tag "x"`},
		},
		{
			name: "Aliases",
			in:   "//queuemax:task name=mail.Send aliases=tasks.SendEmail,example.com/shop/tasks.SendEmail",
			want: &annotations.Directive{Kind: annotations.KindTask, Name: "mail.Send", Aliases: []string{"tasks.SendEmail", "example.com/shop/tasks.SendEmail"}},
		},
		{
			name:    "BadAliases",
			in:      "//queuemax:task aliases=a.B,,a.B",
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`28: queuemax:task: bad aliases "a.B,,a.B": empty name (write aliases=old.Name,other.Name)`, `29: queuemax:task: duplicate alias "a.B"`},
		},
		{
			name:    "TagTooLong",
			in:      "//queuemax:task tags=" + strings.Repeat("t", 65),
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`21: queuemax:task: bad tag "` + strings.Repeat("t", 65) + `": 65 bytes (at most 64)`},
		},
		{
			name:    "BadDuration",
			in:      "//queuemax:task timeout=30",
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`24: queuemax:task: bad timeout "30": want a duration such as 30s or 5m`},
		},
		{
			name:    "ZeroDuration",
			in:      "//queuemax:task retry_delay=0s",
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`28: queuemax:task: bad retry_delay "0s": want a positive duration`},
		},
		{
			name:    "BadRateLimit",
			in:      "//queuemax:task rate_limit=10/fortnight",
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`27: queuemax:task: bad rate_limit "10/fortnight": want s, m, h or a positive duration after /`},
		},
		{
			name:    "RateLimitZero",
			in:      "//queuemax:task rate_limit=0/s",
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`27: queuemax:task: bad rate_limit "0/s": want a count ≥ 1 before /`},
		},
		{
			name:    "BadRetryOnEntry",
			in:      "//queuemax:task retry_on=io.EOF,1bad",
			want:    &annotations.Directive{Kind: annotations.KindTask, RetryOn: []annotations.ErrorRef{{Pkg: "io", Name: "EOF", Offset: 25}}},
			wantErr: []string{`32: queuemax:task: bad retry_on entry "1bad": want an error variable or type such as io.EOF or *net.OpError`},
		},
		{
			name:    "DuplicateRetryOnEntry",
			in:      "//queuemax:task retry_on=io.EOF,io.EOF",
			want:    &annotations.Directive{Kind: annotations.KindTask, RetryOn: []annotations.ErrorRef{{Pkg: "io", Name: "EOF", Offset: 25}}},
			wantErr: []string{`32: queuemax:task: duplicate retry_on entry "io.EOF"`},
		},
		{
			name: "LimitBy",
			in:   "//queuemax:task global_concurrency=2 limit_by=customer_id",
			want: &annotations.Directive{Kind: annotations.KindTask, GlobalConcurrency: 2, LimitBy: "customer_id"},
		},
		{
			name:    "LimitByWithoutGlobalLimit",
			in:      "//queuemax:task rate_limit=1/s limit_by=customer_id",
			want:    &annotations.Directive{Kind: annotations.KindTask, RateLimit: annotations.Rate{Limit: 1, Per: time.Second}, LimitBy: "customer_id"},
			wantErr: []string{`31: queuemax:task: limit_by needs key_rate_limit, key_concurrency, global_rate_limit or global_concurrency`},
		},
		{
			name: "KeyAndTaskLimits",
			in:   "//queuemax:task global_concurrency=10 key_concurrency=1 key_rate_limit=5/s limit_by=customer_id",
			want: &annotations.Directive{Kind: annotations.KindTask, GlobalConcurrency: 10, KeyConcurrency: 1,
				KeyRateLimit: annotations.Rate{Limit: 5, Per: time.Second}, LimitBy: "customer_id"},
		},
		{
			name: "KeyLimitAlone",
			in:   "//queuemax:task key_concurrency=1 limit_by=customer_id",
			want: &annotations.Directive{Kind: annotations.KindTask, KeyConcurrency: 1, LimitBy: "customer_id"},
		},
		{
			name:    "KeyLimitWithoutLimitBy",
			in:      "//queuemax:task key_concurrency=1",
			want:    &annotations.Directive{Kind: annotations.KindTask, KeyConcurrency: 1},
			wantErr: []string{`16: queuemax:task: key_concurrency needs limit_by`},
		},
		{
			name:    "KeyConcurrencyZero",
			in:      "//queuemax:task key_concurrency=0 limit_by=c",
			want:    &annotations.Directive{Kind: annotations.KindTask, LimitBy: "c"},
			wantErr: []string{`32: queuemax:task: bad key_concurrency "0": want an integer ≥ 1`},
		},
		{
			name:    "LimitByBadName",
			in:      "//queuemax:task global_concurrency=1 limit_by=a.b",
			want:    &annotations.Directive{Kind: annotations.KindTask, GlobalConcurrency: 1},
			wantErr: []string{`46: queuemax:task: bad limit_by "a.b": want a payload key: letters, digits, _ and -, at most 64 bytes`},
		},
		{
			name:    "InlineRetriesWithoutRetryOn",
			in:      "//queuemax:task inline_retries=2",
			want:    &annotations.Directive{Kind: annotations.KindTask, InlineRetries: 2},
			wantErr: []string{`16: queuemax:task: inline_retries needs retry_on`},
		},
		{
			name:    "InlineRetriesZero",
			in:      "//queuemax:task retry_on=io.EOF inline_retries=0",
			want:    &annotations.Directive{Kind: annotations.KindTask, RetryOn: []annotations.ErrorRef{{Pkg: "io", Name: "EOF", Offset: 25}}},
			wantErr: []string{`47: queuemax:task: bad inline_retries "0": want an integer ≥ 1`},
		},
		{
			name:    "BadCron",
			in:      `//queuemax:periodic cron="61 * * * *"`,
			want:    &annotations.Directive{Kind: annotations.KindPeriodic},
			wantErr: []string{`25: queuemax:periodic: bad cron "61 * * * *": end of range (61) above maximum (59): 61`},
		},
		{
			name:    "BadTimeZone",
			in:      `//queuemax:periodic cron="CRON_TZ=Mars/Olympus 0 3 * * *"`,
			want:    &annotations.Directive{Kind: annotations.KindPeriodic},
			wantErr: []string{`25: queuemax:periodic: bad cron "CRON_TZ=Mars/Olympus 0 3 * * *": provided bad location Mars/Olympus: unknown time zone Mars/Olympus`},
		},
		{
			name:    "TimeZoneWithoutSchedule",
			in:      `//queuemax:periodic cron=CRON_TZ=UTC`,
			want:    &annotations.Directive{Kind: annotations.KindPeriodic},
			wantErr: []string{`25: queuemax:periodic: bad cron "CRON_TZ=UTC": want a schedule after the time zone`},
		},
		{
			name: "Misfire",
			in:   "//queuemax:periodic every=1h misfire=catch_up",
			want: &annotations.Directive{Kind: annotations.KindPeriodic, Every: time.Hour, Misfire: "catch_up"},
		},
		{
			name:    "BadMisfire",
			in:      "//queuemax:periodic every=1h misfire=later",
			want:    &annotations.Directive{Kind: annotations.KindPeriodic, Every: time.Hour},
			wantErr: []string{`37: queuemax:periodic: bad misfire "later": want skip or catch_up`},
		},
		{
			name:    "EveryTooShort",
			in:      "//queuemax:periodic every=500ms",
			want:    &annotations.Directive{Kind: annotations.KindPeriodic},
			wantErr: []string{`26: queuemax:periodic: bad every "500ms": want at least 1s`},
		},
		{
			name:    "EveryAndCron",
			in:      `//queuemax:periodic every=1h cron="@daily"`,
			want:    &annotations.Directive{Kind: annotations.KindPeriodic, Every: time.Hour, Cron: "@daily"},
			wantErr: []string{`29: queuemax:periodic: set every= or cron=, not both`},
		},
		{
			name:    "NoSchedule",
			in:      "//queuemax:periodic priority=1",
			want:    &annotations.Directive{Kind: annotations.KindPeriodic, Priority: ptr(1)},
			wantErr: []string{`0: queuemax:periodic: missing schedule: set every=DURATION or cron="SPEC"`},
		},
		{
			name:    "UnknownDirective",
			in:      "//queuemax:tsk priority=1",
			wantErr: []string{`0: queuemax: unknown directive "queuemax:tsk" (did you mean "queuemax:task"?)`},
		},
		{
			name:    "UnknownDirectiveFarOff",
			in:      "//queuemax:retryable",
			wantErr: []string{`0: queuemax: unknown directive "queuemax:retryable" (want queuemax:task or queuemax:periodic)`},
		},
		{
			name:    "NotADirective",
			in:      "// queuemax:task",
			wantErr: []string{`0: queuemax: not a directive: want a line starting with "//queuemax:"`},
		},
		{
			name:    "MissingValue",
			in:      "//queuemax:task priority",
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`16: queuemax:task: want key=value, got "priority" (missing =value)`},
		},
		{
			name:    "MissingKey",
			in:      "//queuemax:task =2",
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`16: queuemax:task: missing key before =`},
		},
		{
			name:    "UnterminatedQuote",
			in:      `//queuemax:periodic cron="0 3 * * *`,
			want:    &annotations.Directive{Kind: annotations.KindPeriodic},
			wantErr: []string{`0: queuemax:periodic: missing schedule: set every=DURATION or cron="SPEC"`, `25: queuemax:periodic: unterminated quoted value for "cron"`},
		},
		{
			name:    "JunkAfterQuote",
			in:      `//queuemax:task name="a"b`,
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`21: queuemax:task: want a space after the quoted value of "name", got "b"`},
		},
		{
			name:    "NameWithSpace",
			in:      `//queuemax:task name="a b"`,
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`21: queuemax:task: bad name "a b": want no spaces or control characters`},
		},
		{
			name:    "EveryErrorReported",
			in:      `//queuemax:task priorty=2 retries=x timeout=-1s`,
			want:    &annotations.Directive{Kind: annotations.KindTask},
			wantErr: []string{`16: queuemax:task: unknown key "priorty" (did you mean "priority"?)`, `34: queuemax:task: bad retries "x": want an integer from 0 to 1000`, `44: queuemax:task: bad timeout "-1s": want a positive duration`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := annotations.Parse(tt.in)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
			var gotErr []string
			if err != nil {
				gotErr = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(tt.wantErr, gotErr, cmpopts.EquateEmpty(), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("Parse(%q) errors mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestIsDirective(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"//queuemax:task", true},
		{"//queuemax:whatever", true},
		{"// queuemax:task", false},
		{"//go:generate", false},
		{"/*queuemax:task*/", false},
	}
	for _, tt := range tests {
		if got := annotations.IsDirective(tt.in); got != tt.want {
			t.Errorf("IsDirective(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestDirective_String(t *testing.T) {
	t.Parallel()
	in := `//queuemax:periodic name="a b=c" priority=1 retries=0 timeout=1m30s retry_delay=2s rate_limit=3/m retry_on=*net.OpError,ErrBusy inline_retries=2 cron="CRON_TZ=UTC 0 3 * * *"`
	d, err := annotations.Parse(in)
	if err == nil {
		t.Fatalf("Parse(%q) accepted a name with a space", in)
	}
	in = strings.Replace(in, `name="a b=c"`, `name="a=b"`, 1)
	d, err = annotations.Parse(in)
	if err != nil {
		t.Fatalf("Parse(%q): %v", in, err)
	}
	want := `//queuemax:periodic name="a=b" priority=1 retries=0 timeout=1m30s retry_delay=2s rate_limit=3/1m0s retry_on=*net.OpError,ErrBusy inline_retries=2 cron="CRON_TZ=UTC 0 3 * * *"`
	if got := d.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// FuzzParse checks that Parse never panics, reports offsets inside the
// line, and that an accepted directive survives a round trip through
// String.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"//queuemax:task",
		"//queuemax:task priority=2 retries=5 timeout=30s",
		`//queuemax:task name="x.y" rate_limit=10/s retry_on=io.EOF,*net.OpError inline_retries=2`,
		`//queuemax:periodic cron="CRON_TZ=UTC 0 3 * * *"`,
		"//queuemax:periodic every=1h",
		"//queuemax:task unique=args unique_for=1h unique_states=pending,scheduled,processing,failed",
		`//queuemax:periodic cron="TZ=`,
		"//queuemax:task =",
		"//queuemax:tsk",
	} {
		f.Add(s)
	}
	ignoreOffsets := cmpopts.IgnoreFields(annotations.ErrorRef{}, "Offset")
	f.Fuzz(func(t *testing.T, line string) {
		d, err := annotations.Parse(line)
		if err != nil {
			list, ok := err.(annotations.ErrorList)
			if !ok {
				t.Fatalf("Parse(%q) error has type %T, want ErrorList", line, err)
			}
			for _, e := range list {
				if e.Offset < 0 || e.Offset > len(line) {
					t.Fatalf("Parse(%q) error offset %d outside the line: %v", line, e.Offset, e)
				}
			}
			return
		}
		for _, r := range d.RetryOn {
			if r.Offset < 0 || r.Offset >= len(line) {
				t.Fatalf("Parse(%q) retry_on offset %d outside the line", line, r.Offset)
			}
		}
		if (d.Kind == annotations.KindPeriodic) == (d.Every == 0 && d.Cron == "") {
			t.Fatalf("Parse(%q) = %+v: periodic needs exactly one schedule", line, d)
		}
		again, err := annotations.Parse(d.String())
		if err != nil {
			t.Fatalf("Parse(String()) of %q = %q: %v", line, d.String(), err)
		}
		if diff := cmp.Diff(d, again, cmpopts.EquateEmpty(), ignoreOffsets); diff != "" {
			t.Fatalf("round trip of %q through %q mismatch (-want +got):\n%s", line, d.String(), diff)
		}
	})
}
