// Package annotations parses queuemax's //queuemax: directives.
//
// It is pure: a directive line goes in, a [Directive] and an [ErrorList]
// come out. Package gen finds the lines in Go source, resolves the names
// they mention and reports errors at file:line:col.
//
// # Grammar
//
// A directive is a line comment with no space after the slashes, in the
// doc comment of a top-level function:
//
//	//queuemax:task [key=value ...]
//	//queuemax:periodic (every=DURATION | cron="SPEC") [key=value ...]
//
// Pairs are separated by spaces or tabs. A value that holds spaces is
// written as a Go string literal ("…" or `…`) and unquoted with
// strconv.Unquote. Keys of both directives:
//
//	name=STRING            stable task name stored in every job row; default pkgname.Func
//	                       (the package name, not its import path), unique in a program
//	aliases=LIST           comma-separated earlier names of the task: jobs stored under
//	                       one run as this task (after a rename, while old jobs drain)
//	priority=0|1|2         default priority (0 low, 2 high)
//	retries=N              retries after the first attempt, 0 ≤ N ≤ 1000 (0 disables retries)
//	timeout=DURATION       bound on one attempt, a time.ParseDuration string > 0
//	retry_delay=DURATION   backoff base, > 0
//	rate_limit=N/UNIT      token bucket, UNIT s, m, h or a duration: 10/s, 100/m, 5/30s
//	retry_on=LIST          comma-separated sentinel errors or error types to retry
//	                       in the worker: io.ErrUnexpectedEOF,*net.OpError,ErrBusy
//	inline_retries=N       how many in-worker retries retry_on allows, N ≥ 1
//	circuit=off            the task's circuit breaker never opens (on: the default)
//	queue=NAME             the task's named queue (default: the default queue); a-z, 0-9, _ - .,
//	                       at most 64 bytes, starting with a letter or digit
//	tags=LIST              comma-separated default tags of the task's jobs: each 1–64
//	                       bytes without spaces or control characters, at most 20, no
//	                       duplicates (Opts.Tags replaces them for one enqueue)
//	global_rate_limit=N/UNIT  as rate_limit, over every process on the same data
//	                       directory or database: at most N starts in any window of UNIT
//	global_concurrency=N   at most N jobs of the task run at once over every process, N ≥ 1
//	limit_by=KEY           limits per distinct value of the payload key KEY (a parameter's
//	                       JSON name, e.g. customer_id): key_rate_limit= and key_concurrency=,
//	                       or, without them, both global limits apply per value
//	key_rate_limit=N/UNIT  as global_rate_limit, for each value of limit_by's key
//	key_concurrency=N      as global_concurrency, for each value of limit_by's key; with
//	                       either key_ limit, the global_ ones hold over the whole task
//
// Unique jobs (//queuemax:task only; a duplicate enqueue returns the stored
// job's ID instead of inserting):
//
//	unique=args|key        the key: the task plus its arguments, or plus the
//	                       caller's Opts.UniqueKey
//	unique_for=DURATION    plus the period window (≥ 1s) holding the run time;
//	                       alone, one job per task per window
//	unique_states=LIST     statuses during which a job holds its key; must
//	                       include pending,scheduled,processing (the default)
//	                       and may add completed, failed, cancelled
//
// Keys of //queuemax:periodic only, exactly one of:
//
//	every=DURATION         fixed interval, at least 1s
//	misfire=skip|catch_up  what to do with slots missed while no scheduler ran (default skip)
//	cron="SPEC"            a standard cron spec checked with cron.ParseStandard:
//	                       five fields, @hourly, "@every 90m", "CRON_TZ=Europe/Paris 0 3 * * *"
package annotations

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/queuemax/queuemax/internal/suggest"
	"github.com/queuemax/queuemax/runtime/store"
)

// Prefix starts every directive line.
const Prefix = "//queuemax:"

// Kind says which directive a line holds.
type Kind int

const (
	// KindTask is //queuemax:task.
	KindTask Kind = iota + 1
	// KindPeriodic is //queuemax:periodic.
	KindPeriodic
)

// String returns the directive as written after the slashes, such as
// "queuemax:task".
func (k Kind) String() string {
	switch k {
	case KindTask:
		return "queuemax:task"
	case KindPeriodic:
		return "queuemax:periodic"
	}
	return "queuemax:?"
}

// Directive is one parsed directive line. Fields left out of the line keep
// their zero value, except where a pointer marks "set".
type Directive struct {
	Kind Kind
	// Name is the stable task name. Empty means the default.
	Name string
	// Aliases are earlier names of the task (aliases=), in source order:
	// jobs stored under them run as this task.
	Aliases []string
	// Priority is 0–2; nil means unset.
	Priority *int
	// Retries is the retry count; nil means unset, and a pointer to 0 is an
	// explicit "no retries".
	Retries *int
	// Timeout bounds one attempt; zero means unset.
	Timeout time.Duration
	// RetryDelay is the backoff base; zero means unset.
	RetryDelay time.Duration
	// RateLimit is the token bucket; the zero Rate means unset.
	RateLimit Rate
	// GlobalRateLimit is global_rate_limit=, the rate over every
	// process; the zero Rate means unset.
	GlobalRateLimit Rate
	// GlobalConcurrency is global_concurrency=N, the most jobs running at
	// once over every process; zero means unset.
	GlobalConcurrency int
	// LimitBy is limit_by=KEY, the payload key the per-key limits apply
	// per; empty means unset.
	LimitBy string
	// KeyRateLimit and KeyConcurrency are key_rate_limit= and
	// key_concurrency=N, the limits of each value of LimitBy; zero means
	// unset (then the global limits apply per value).
	KeyRateLimit   Rate
	KeyConcurrency int
	// RetryOn lists the errors to retry in the worker, in source order.
	RetryOn []ErrorRef
	// InlineRetries is how many in-worker retries RetryOn allows; zero
	// means unset.
	InlineRetries int
	// CircuitOff is circuit=off: the task's circuit breaker never opens.
	CircuitOff bool
	// Queue is the task's named queue; empty means the default queue.
	Queue string
	// Unique is unique=: "args" or "key"; empty means unset.
	Unique string
	// UniqueFor is unique_for=, the period window; zero means unset.
	UniqueFor time.Duration
	// UniqueStates is unique_states=, the counted statuses in source
	// order; nil means unset (pending, scheduled, processing).
	UniqueStates []string
	// Tags are the task's default job tags, in source order.
	Tags []string
	// Every is the interval of a periodic task.
	Every time.Duration
	// Cron is the cron spec of a periodic task, unquoted.
	Cron string
	// Misfire is a periodic task's misfire policy, "skip" or "catch_up";
	// empty means unset (skip).
	Misfire string
}

// Rate is Limit tokens per Per.
type Rate struct {
	Limit int
	Per   time.Duration
}

// ErrorRef names one retry_on entry: a sentinel error variable or an error
// type, optionally qualified by an import name and optionally behind a
// pointer. Which of the two it is depends on what the name resolves to.
type ErrorRef struct {
	// Pointer is set for a leading '*'.
	Pointer bool
	// Pkg is the import name before the dot, empty for a name of the
	// package itself.
	Pkg string
	// Name is the identifier.
	Name string
	// Offset is the byte offset of the entry in the line.
	Offset int
}

// String returns the entry as written: "*net.OpError".
func (r ErrorRef) String() string {
	s := r.Name
	if r.Pkg != "" {
		s = r.Pkg + "." + s
	}
	if r.Pointer {
		s = "*" + s
	}
	return s
}

// Error is one problem in a directive line.
type Error struct {
	// Kind is the directive the problem is in; zero when the directive
	// itself is unknown.
	Kind Kind
	// Offset is the byte offset in the line of the text at fault.
	Offset int
	// Msg describes the problem in lowercase, without a trailing period.
	Msg string
}

// Error returns "queuemax:task: msg".
func (e *Error) Error() string {
	if e.Kind == 0 {
		return "queuemax: " + e.Msg
	}
	return e.Kind.String() + ": " + e.Msg
}

// ErrorList is every problem of a line, sorted by offset.
type ErrorList []*Error

// Error joins the messages with newlines.
func (l ErrorList) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%d: %s", e.Offset, e.Error())
	}
	return b.String()
}

// Err returns l, or nil when l is empty.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// IsDirective reports whether line, the text of one comment including its
// slashes, is a queuemax directive (well formed or not).
func IsDirective(line string) bool { return strings.HasPrefix(line, Prefix) }

// keys of //queuemax:task, in documentation order.
// MaxRetries is the largest retries=N accepted, as queuemax.MaxRetriesLimit.
const MaxRetries = 1000

var taskKeys = []string{"name", "aliases", "priority", "retries", "timeout", "retry_delay", "rate_limit", "retry_on", "inline_retries", "circuit", "queue", "tags",
	"unique", "unique_for", "unique_states", "global_rate_limit", "global_concurrency", "limit_by",
	"key_rate_limit", "key_concurrency"}

// uniqueKeys are the task keys a periodic task rejects: each of its slots
// fires once already.
var uniqueKeys = []string{"unique", "unique_for", "unique_states"}

// jobStatuses are the status names unique_states accepts, and
// requiredStates those it must list.
var (
	jobStatuses    = []string{"pending", "scheduled", "processing", "completed", "failed", "cancelled"}
	requiredStates = []string{"pending", "scheduled", "processing"}
)

// Tag limits, as queuemax.MaxTags and queuemax.MaxTagLength.
const (
	MaxTags      = 20
	MaxTagLength = 64
)

// extra keys of //queuemax:periodic.
var periodicKeys = []string{"every", "cron", "misfire"}

// verbs after the prefix.
var verbs = []string{"task", "periodic"}

// Parse parses one directive line, the text of a line comment including
// its leading "//". It returns the directive (nil only when the line is not
// a queuemax directive at all or names an unknown one) and every problem
// found, as an ErrorList; the directive is meaningful only if the error is
// nil.
func Parse(line string) (*Directive, error) {
	if !IsDirective(line) {
		return nil, ErrorList{{Offset: 0, Msg: fmt.Sprintf("not a directive: want a line starting with %q", Prefix)}}
	}
	rest := line[len(Prefix):]
	verbEnd := strings.IndexFunc(rest, isSpace)
	if verbEnd < 0 {
		verbEnd = len(rest)
	}
	verb := rest[:verbEnd]
	d := &Directive{}
	switch verb {
	case "task":
		d.Kind = KindTask
	case "periodic":
		d.Kind = KindPeriodic
	default:
		msg := fmt.Sprintf("unknown directive %q", "queuemax:"+verb)
		if s := suggest.Closest(verb, verbs); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", "queuemax:"+s)
		} else {
			msg += " (want queuemax:task or queuemax:periodic)"
		}
		return nil, ErrorList{{Offset: 0, Msg: msg}}
	}
	p := parser{line: line, d: d, seen: map[string]int{}}
	p.pairs(len(Prefix) + verbEnd)
	p.finish()
	sort.SliceStable(p.errs, func(i, j int) bool { return p.errs[i].Offset < p.errs[j].Offset })
	return d, p.errs.Err()
}

type parser struct {
	line string
	d    *Directive
	errs ErrorList
	seen map[string]int // key → offset of its first occurrence
}

func (p *parser) errorf(off int, format string, args ...any) {
	p.errs = append(p.errs, &Error{Kind: p.d.Kind, Offset: off, Msg: fmt.Sprintf(format, args...)})
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' }

// pairs scans key=value pairs from offset i.
func (p *parser) pairs(i int) {
	s := p.line
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) {
			return
		}
		start := i
		for i < len(s) && s[i] != '=' && s[i] != ' ' && s[i] != '\t' && s[i] != '"' && s[i] != '`' {
			i++
		}
		key := s[start:i]
		if i >= len(s) || s[i] != '=' {
			// Skip the rest of the word, quoted parts included.
			i = skipWord(s, i)
			if key == "" {
				p.errorf(start, "want key=value, got %q", s[start:i])
			} else {
				p.errorf(start, "want key=value, got %q (missing =value)", s[start:i])
			}
			continue
		}
		i++ // '='
		valStart := i
		var val string
		if i < len(s) && (s[i] == '"' || s[i] == '`') {
			end, ok := quoteEnd(s, i)
			if !ok {
				p.errorf(valStart, "unterminated quoted value for %q", key)
				return
			}
			lit := s[i:end]
			i = end
			if i < len(s) && !isSpace(rune(s[i])) {
				j := skipWord(s, i)
				p.errorf(valStart, "want a space after the quoted value of %q, got %q", key, s[i:j])
				i = j
				continue
			}
			u, err := strconv.Unquote(lit)
			if err != nil {
				p.errorf(valStart, "bad quoted value for %q: %s", key, lit)
				continue
			}
			val = u
		} else {
			i = skipWord(s, i)
			val = s[valStart:i]
		}
		if key == "" {
			p.errorf(start, "missing key before =")
			continue
		}
		p.pair(key, val, start, valStart)
	}
}

// skipWord returns the offset of the next space or tab at or after i,
// stepping over quoted parts.
func skipWord(s string, i int) int {
	for i < len(s) && s[i] != ' ' && s[i] != '\t' {
		if s[i] == '"' || s[i] == '`' {
			if end, ok := quoteEnd(s, i); ok {
				i = end
				continue
			}
			return len(s)
		}
		i++
	}
	return i
}

// quoteEnd returns the offset just past the string literal starting at i.
func quoteEnd(s string, i int) (int, bool) {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case q == '"' && s[j] == '\\':
			j++
		case s[j] == q:
			return j + 1, true
		}
	}
	return 0, false
}

// validKeys returns the keys of the directive's kind.
func (p *parser) validKeys() []string {
	if p.d.Kind == KindPeriodic {
		return append(append([]string(nil), taskKeys...), periodicKeys...)
	}
	return taskKeys
}

func (p *parser) pair(key, val string, keyOff, valOff int) {
	if !contains(p.validKeys(), key) {
		switch {
		case p.d.Kind == KindTask && contains(periodicKeys, key):
			p.errorf(keyOff, "key %q is only valid in queuemax:periodic", key)
		default:
			msg := fmt.Sprintf("unknown key %q", key)
			if s := suggest.Closest(key, p.validKeys()); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			p.errorf(keyOff, "%s", msg)
		}
		return
	}
	if _, dup := p.seen[key]; dup {
		p.errorf(keyOff, "duplicate key %q", key)
		return
	}
	if p.d.Kind == KindPeriodic && contains(uniqueKeys, key) {
		p.errorf(keyOff, "key %q is only valid in queuemax:task (a periodic slot fires once already)", key)
		return
	}
	p.seen[key] = keyOff
	bad := func(format string, args ...any) {
		p.errorf(valOff, "bad %s %q: %s", key, val, fmt.Sprintf(format, args...))
	}
	switch key {
	case "name":
		switch {
		case val == "":
			p.errorf(valOff, "empty name")
		case strings.IndexFunc(val, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0:
			bad("want no spaces or control characters")
		case !utf8.ValidString(val):
			bad("want valid UTF-8")
		default:
			p.d.Name = val
		}
	case "priority":
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 || n > 2 {
			bad("want 0 (low), 1 (medium) or 2 (high)")
			return
		}
		p.d.Priority = &n
	case "retries":
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 || n > MaxRetries {
			bad("want an integer from 0 to %d", MaxRetries)
			return
		}
		p.d.Retries = &n
	case "queue":
		if problem := store.QueueNameProblem(val); problem != "" {
			bad("%s", problem)
			return
		}
		p.d.Queue = val
	case "circuit":
		if val != "off" && val != "on" {
			bad("want off or on")
			return
		}
		p.d.CircuitOff = val == "off"
	case "inline_retries":
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 {
			bad("want an integer ≥ 1")
			return
		}
		p.d.InlineRetries = n
	case "timeout", "retry_delay":
		d, err := time.ParseDuration(val)
		switch {
		case err != nil:
			bad("want a duration such as 30s or 5m")
			return
		case d <= 0:
			bad("want a positive duration")
			return
		}
		if key == "timeout" {
			p.d.Timeout = d
		} else {
			p.d.RetryDelay = d
		}
	case "every":
		d, err := time.ParseDuration(val)
		switch {
		case err != nil:
			bad("want a duration such as 1h or 15m")
			return
		case d < time.Second:
			bad("want at least 1s")
			return
		}
		p.d.Every = d
	case "misfire":
		if val != "skip" && val != "catch_up" {
			bad("want skip or catch_up")
			return
		}
		p.d.Misfire = val
	case "cron":
		if err := checkCron(val); err != nil {
			bad("%v", err)
			return
		}
		p.d.Cron = val
	case "rate_limit", "global_rate_limit", "key_rate_limit":
		r, err := parseRate(val)
		if err != nil {
			bad("%v", err)
			return
		}
		switch key {
		case "rate_limit":
			p.d.RateLimit = r
		case "global_rate_limit":
			p.d.GlobalRateLimit = r
		default:
			p.d.KeyRateLimit = r
		}
	case "global_concurrency", "key_concurrency":
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 {
			bad("want an integer ≥ 1")
			return
		}
		if key == "global_concurrency" {
			p.d.GlobalConcurrency = n
		} else {
			p.d.KeyConcurrency = n
		}
	case "limit_by":
		if !limitByName(val) {
			bad("want a payload key: letters, digits, _ and -, at most 64 bytes")
			return
		}
		p.d.LimitBy = val
	case "retry_on":
		p.retryOn(val, valOff)
	case "unique":
		if val != "args" && val != "key" {
			bad("want args (the arguments) or key (Opts.UniqueKey)")
			return
		}
		p.d.Unique = val
	case "unique_for":
		d, err := time.ParseDuration(val)
		switch {
		case err != nil:
			bad("want a duration such as 1h or 24h")
			return
		case d < time.Second:
			bad("want at least 1s")
			return
		}
		p.d.UniqueFor = d
	case "unique_states":
		p.uniqueStates(val, valOff)
	case "tags":
		p.tags(val, valOff)
	case "aliases":
		p.aliases(val, valOff) // values.go
	}
}
