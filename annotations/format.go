package annotations

import (
	"fmt"
	"strconv"
	"strings"
)

// Writing a directive back as text.

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// String formats d as a canonical directive line that Parse reads back to
// an equal Directive (offsets of retry_on entries aside).
func (d *Directive) String() string {
	var b strings.Builder
	b.WriteString("//")
	b.WriteString(d.Kind.String())
	if d.Name != "" {
		b.WriteString(" name=" + quoteIfNeeded(d.Name))
	}
	if d.Priority != nil {
		fmt.Fprintf(&b, " priority=%d", *d.Priority)
	}
	if d.Retries != nil {
		fmt.Fprintf(&b, " retries=%d", *d.Retries)
	}
	if d.Timeout != 0 {
		b.WriteString(" timeout=" + d.Timeout.String())
	}
	if d.RetryDelay != 0 {
		b.WriteString(" retry_delay=" + d.RetryDelay.String())
	}
	if d.RateLimit != (Rate{}) {
		fmt.Fprintf(&b, " rate_limit=%d/%s", d.RateLimit.Limit, d.RateLimit.Per)
	}
	if len(d.RetryOn) > 0 {
		refs := make([]string, len(d.RetryOn))
		for i, r := range d.RetryOn {
			refs[i] = r.String()
		}
		b.WriteString(" retry_on=" + strings.Join(refs, ","))
	}
	if d.InlineRetries != 0 {
		fmt.Fprintf(&b, " inline_retries=%d", d.InlineRetries)
	}
	if d.CircuitOff {
		b.WriteString(" circuit=off")
	}
	if d.Unique != "" {
		b.WriteString(" unique=" + d.Unique)
	}
	if d.UniqueFor != 0 {
		b.WriteString(" unique_for=" + d.UniqueFor.String())
	}
	if len(d.UniqueStates) > 0 {
		b.WriteString(" unique_states=" + strings.Join(d.UniqueStates, ","))
	}
	if len(d.Tags) > 0 {
		b.WriteString(" tags=" + quoteIfNeeded(strings.Join(d.Tags, ",")))
	}
	if d.Every != 0 {
		b.WriteString(" every=" + d.Every.String())
	}
	if d.Cron != "" {
		b.WriteString(" cron=" + strconv.Quote(d.Cron))
	}
	if d.Misfire != "" {
		b.WriteString(" misfire=" + d.Misfire)
	}
	return b.String()
}

func quoteIfNeeded(s string) string {
	if strings.ContainsAny(s, " \t\"`=") || s == "" {
		return strconv.Quote(s)
	}
	return s
}
