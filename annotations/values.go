package annotations

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/queuemax/queuemax/internal/suggest"
	"github.com/robfig/cron/v3"
)

// Parsing and checking the values of single keys.

// tags parses tags=a,b, reporting each bad tag at its own column.
func (p *parser) tags(val string, valOff int) {
	parts := strings.Split(val, ",")
	if len(parts) > MaxTags {
		p.errorf(valOff, "bad tags: %d tags (at most %d)", len(parts), MaxTags)
		return
	}
	seen := map[string]bool{}
	off := valOff
	var out []string
	ok := true
	for _, t := range parts {
		switch {
		case t == "":
			p.errorf(off, "bad tags %q: empty tag (write tags=a,b)", val)
			ok = false
		case len(t) > MaxTagLength:
			p.errorf(off, "bad tag %q: %d bytes (at most %d)", t, len(t), MaxTagLength)
			ok = false
		case !utf8.ValidString(t) || strings.IndexFunc(t, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
			p.errorf(off, "bad tag %q: want no spaces or control characters", t)
			ok = false
		case seen[t]:
			p.errorf(off, "duplicate tag %q", t)
			ok = false
		}
		seen[t] = true
		out = append(out, t)
		off += len(t) + 1
	}
	if ok {
		p.d.Tags = out
	}
}

// uniqueStates parses unique_states=LIST.
func (p *parser) uniqueStates(val string, valOff int) {
	var states []string
	ok := true
	for entry := range strings.SplitSeq(val, ",") {
		e := strings.TrimSpace(entry)
		switch {
		case !contains(jobStatuses, e):
			msg := fmt.Sprintf("bad unique_states %q: unknown status %q (want %s)", val, e, strings.Join(jobStatuses, ", "))
			if s := suggest.Closest(e, jobStatuses); s != "" && e != "" {
				msg = fmt.Sprintf("bad unique_states %q: unknown status %q (did you mean %q?)", val, e, s)
			}
			p.errorf(valOff, "%s", msg)
			ok = false
		case contains(states, e):
			p.errorf(valOff, "bad unique_states %q: duplicate status %q", val, e)
			ok = false
		default:
			states = append(states, e)
		}
	}
	if !ok {
		return
	}
	var missing []string
	for _, r := range requiredStates {
		if !contains(states, r) {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		p.errorf(valOff, "bad unique_states %q: must include pending, scheduled and processing (missing %s)", val, strings.Join(missing, ", "))
		return
	}
	p.d.UniqueStates = states
}

// checkCron validates a cron spec with cron.ParseStandard, turning its
// panics on malformed time zone prefixes into errors.
func checkCron(spec string) (err error) {
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		if !strings.Contains(spec, " ") {
			return fmt.Errorf("want a schedule after the time zone")
		}
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed spec")
		}
	}()
	if _, err := cron.ParseStandard(spec); err != nil {
		return err
	}
	return nil
}

// parseRate parses N/UNIT.
func parseRate(s string) (Rate, error) {
	n, unit, ok := strings.Cut(s, "/")
	if !ok {
		return Rate{}, fmt.Errorf("want N/s, N/m or N/h")
	}
	limit, err := strconv.Atoi(n)
	if err != nil || limit < 1 {
		return Rate{}, fmt.Errorf("want a count ≥ 1 before /")
	}
	var per time.Duration
	switch unit {
	case "s":
		per = time.Second
	case "m":
		per = time.Minute
	case "h":
		per = time.Hour
	default:
		d, err := time.ParseDuration(unit)
		if err != nil || d <= 0 {
			return Rate{}, fmt.Errorf("want s, m, h or a positive duration after /")
		}
		per = d
	}
	return Rate{Limit: limit, Per: per}, nil
}

// retryOn parses a comma-separated list of [*][pkg.]Name entries.
func (p *parser) retryOn(val string, valOff int) {
	// Offsets of entries are exact for unquoted values; a quoted value
	// reports every entry at the value's offset.
	quoted := valOff < len(p.line) && (p.line[valOff] == '"' || p.line[valOff] == '`')
	seen := map[string]bool{}
	off := 0
	for entry := range strings.SplitSeq(val, ",") {
		entryOff := valOff
		if !quoted {
			entryOff += off
		}
		off += len(entry) + 1
		text := strings.TrimSpace(entry)
		ref, ok := parseErrorRef(text)
		if !ok {
			if text == "" {
				p.errorf(entryOff, "bad retry_on %q: empty entry", val)
			} else {
				p.errorf(entryOff, "bad retry_on entry %q: want an error variable or type such as io.EOF or *net.OpError", text)
			}
			continue
		}
		if seen[ref.String()] {
			p.errorf(entryOff, "duplicate retry_on entry %q", ref.String())
			continue
		}
		seen[ref.String()] = true
		ref.Offset = entryOff
		p.d.RetryOn = append(p.d.RetryOn, ref)
	}
}

func parseErrorRef(s string) (ErrorRef, bool) {
	var r ErrorRef
	if strings.HasPrefix(s, "*") {
		r.Pointer = true
		s = s[1:]
	}
	pkg, name, qualified := strings.Cut(s, ".")
	if !qualified {
		pkg, name = "", s
	} else if !isIdent(pkg) {
		return r, false
	}
	if !isIdent(name) || name == "_" || pkg == "_" {
		return r, false
	}
	r.Pkg, r.Name = pkg, name
	return r, true
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !unicode.IsLetter(r) && r != '_' && (i == 0 || !unicode.IsDigit(r)) {
			return false
		}
	}
	return !isKeyword(s)
}

func isKeyword(s string) bool {
	switch s {
	case "break", "case", "chan", "const", "continue", "default", "defer", "else",
		"fallthrough", "for", "func", "go", "goto", "if", "import", "interface",
		"map", "package", "range", "return", "select", "struct", "switch", "type", "var":
		return true
	}
	return false
}

// limitByName reports whether s may name a payload key for limit_by= (as
// queuemax.TaskOptions.LimitBy accepts it).
func limitByName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// finish checks rules that span keys.
func (p *parser) finish() {
	if off, ok := p.seen["limit_by"]; ok {
		_, rate := p.seen["global_rate_limit"]
		_, conc := p.seen["global_concurrency"]
		_, krate := p.seen["key_rate_limit"]
		_, kconc := p.seen["key_concurrency"]
		if !rate && !conc && !krate && !kconc {
			p.errorf(off, "limit_by needs key_rate_limit, key_concurrency, global_rate_limit or global_concurrency")
		}
	}
	for _, k := range []string{"key_rate_limit", "key_concurrency"} {
		if off, ok := p.seen[k]; ok {
			if _, by := p.seen["limit_by"]; !by {
				p.errorf(off, "%s needs limit_by", k)
			}
		}
	}
	if off, ok := p.seen["inline_retries"]; ok {
		if _, ok := p.seen["retry_on"]; !ok {
			p.errorf(off, "inline_retries needs retry_on")
		}
	}
	if off, ok := p.seen["unique_states"]; ok {
		_, byKey := p.seen["unique"]
		_, byFor := p.seen["unique_for"]
		if !byKey && !byFor && p.d.Kind == KindTask {
			p.errorf(off, "unique_states needs unique= or unique_for=")
		}
	}
	if p.d.Kind != KindPeriodic {
		return
	}
	everyOff, every := p.seen["every"]
	cronOff, hasCron := p.seen["cron"]
	switch {
	case every && hasCron:
		p.errorf(max(everyOff, cronOff), "set every= or cron=, not both")
	case !every && !hasCron:
		p.errorf(0, "missing schedule: set every=DURATION or cron=\"SPEC\"")
	}
}

// aliases parses aliases=old.Name,other.Name: names as name= takes them,
// without duplicates.
func (p *parser) aliases(val string, valOff int) {
	seen := map[string]bool{}
	off := valOff
	var out []string
	ok := true
	for a := range strings.SplitSeq(val, ",") {
		switch {
		case a == "":
			p.errorf(off, "bad aliases %q: empty name (write aliases=old.Name,other.Name)", val)
			ok = false
		case !utf8.ValidString(a) || strings.IndexFunc(a, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0:
			p.errorf(off, "bad alias %q: want no spaces or control characters", a)
			ok = false
		case seen[a]:
			p.errorf(off, "duplicate alias %q", a)
			ok = false
		}
		seen[a] = true
		out = append(out, a)
		off += len(a) + 1
	}
	if ok {
		p.d.Aliases = out
	}
}
