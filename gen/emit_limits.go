package gen

import (
	"go/token"
	"strings"

	"github.com/dave/jennifer/jen"
)

// emitGlobalLimits writes a task's global limits into its TaskOptions
// literal.
func emitGlobalLimits(g *jen.Group, t taskSpec) {
	if t.GlobalRateLimit.Limit != 0 {
		g.Line().Id("GlobalRateLimit").Op(":").Add(qm("Rate")).Values(jen.Dict{
			jen.Id("Limit"): jen.Lit(t.GlobalRateLimit.Limit),
			jen.Id("Per"):   duration(t.GlobalRateLimit.Per),
		})
	}
	if t.GlobalConcurrency != 0 {
		g.Line().Id("GlobalConcurrency").Op(":").Lit(t.GlobalConcurrency)
	}
	if t.LimitBy != "" {
		g.Line().Id("LimitBy").Op(":").Lit(t.LimitBy)
	}
	if t.KeyRateLimit.Limit != 0 {
		g.Line().Id("KeyRateLimit").Op(":").Add(qm("Rate")).Values(jen.Dict{
			jen.Id("Limit"): jen.Lit(t.KeyRateLimit.Limit),
			jen.Id("Per"):   duration(t.KeyRateLimit.Per),
		})
	}
	if t.KeyConcurrency != 0 {
		g.Line().Id("KeyConcurrency").Op(":").Lit(t.KeyConcurrency)
	}
}

// checkLimitBy reports a limit_by= that names no parameter of the task:
// the parameters are the payload's top-level keys, by their JSON names.
func checkLimitBy(d *funcDirective, t taskSpec, fail func(token.Pos, string, ...any)) {
	if t.LimitBy == "" {
		return
	}
	names := make([]string, len(t.Params))
	for i, p := range t.Params {
		if p.JSON == t.LimitBy {
			return
		}
		names[i] = p.JSON
	}
	pos := d.comment.Slash
	if i := strings.Index(d.comment.Text, "limit_by="); i >= 0 {
		pos += token.Pos(i)
	}
	if len(names) == 0 {
		fail(pos, "limit_by %q names no parameter: the task has no parameters", t.LimitBy)
		return
	}
	fail(pos, "limit_by %q names no parameter (the payload keys are %s)", t.LimitBy, strings.Join(names, ", "))
}
