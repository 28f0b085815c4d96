package gen

import "github.com/dave/jennifer/jen"

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
}
