package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

// workflowMethods renders the methods that add a task as a step of a
// workflow, for a task Charge(ctx, order Order, amount int64) (Receipt, error):
//
//	func (t ChargeTask) Step(wf *queuemax.Workflow, stepName string, order queuemax.Input[Order], amount queuemax.Input[int64], stepOpts ...queuemax.StepOption) queuemax.StepRef[Receipt]
//	func (t ChargeTask) StepArgs(wf *queuemax.Workflow, stepName string, args ChargeArgs, stepOpts ...queuemax.StepOption) queuemax.StepRef[Receipt]
//
// A task that returns only an error gives a queuemax.StepRef[queuemax.NoResult].
func workflowMethods(t taskSpec, n taskNames) []jen.Code {
	recv := jen.Id("t").Id(n.stub)
	result := qm("NoResult")
	if t.Result != nil {
		result = typ(*t.Result)
	}
	ref := qm("StepRef").Types(result)
	lead := []jen.Code{
		jen.Id("wf").Op("*").Add(qm("Workflow")),
		jen.Id("stepName").String(),
	}
	optsParam := jen.Id("stepOpts").Op("...").Add(qm("StepOption"))
	addStep := func(args jen.Code) jen.Code {
		return jen.Return(qm("AddStep").Types(result.Clone()).Call(
			jen.Id("wf"), jen.Id("t").Dot("task"), jen.Id("stepName"), args, jen.Id("stepOpts").Op("..."),
		))
	}

	params := append([]jen.Code{}, lead...)
	for _, p := range t.Params {
		params = append(params, jen.Id(p.Local).Add(qm("Input").Types(typ(p.Type))))
	}
	params = append(params, optsParam.Clone())
	body := []jen.Code{addStep(jen.Id(n.args).Values())}
	if len(t.Params) > 0 {
		body = []jen.Code{jen.Var().Id("args").Id(n.args), jen.Id("stepOpts").Op("=").Append(
			jen.Index().Add(qm("StepOption")).ValuesFunc(func(g *jen.Group) {
				for _, p := range t.Params {
					g.Line().Id(p.Local).Dot("Into").Call(jen.Op("&").Id("args").Dot(p.Field), jen.Lit(p.JSON))
				}
				g.Line()
			}),
			jen.Id("stepOpts").Op("..."),
		), addStep(jen.Id("args"))}
	}

	var out []jen.Code
	stepDoc := []string{
		fmt.Sprintf("Step adds a %s step named stepName to wf and returns it:", t.Func),
		"later steps wait for it with queuemax.After(ref.Name()) and bind its",
		"result to a parameter with queuemax.From(ref).",
	}
	if t.Result == nil {
		stepDoc = []string{
			fmt.Sprintf("Step adds a %s step named stepName to wf and returns it:", t.Func),
			"later steps wait for it with queuemax.After(ref.Name()). Its task",
			"returns no result to bind.",
		}
	}
	if len(t.Params) > 0 {
		stepDoc = append(stepDoc,
			"",
			"Each parameter is a value, queuemax.Value(v), or the result of an",
			"earlier step whose task returns the parameter's type, queuemax.From(ref),",
			"which makes this step wait for that one; a result of another type does",
			"not compile.",
		)
	}
	stepDoc = append(stepDoc,
		"",
		"The step's job takes the handle's defaults and With overrides. An error",
		"(a duplicate step name, an unbound handle) is kept by wf and returned by",
		"[queuemax.Client.EnqueueWorkflow].",
	)
	out = append(out, doc(stepDoc...).Func().Params(recv.Clone()).Id("Step").Params(params...).Add(ref.Clone()).Block(body...))
	if len(t.Params) == 0 {
		return out
	}
	out = append(out, doc(
		fmt.Sprintf("StepArgs adds a %s step named stepName with payload args", t.Func),
		"to wf, every parameter a value, and returns it (see Step).",
	).Func().Params(recv.Clone()).Id("StepArgs").Params(append(lead, jen.Id("args").Id(n.args), optsParam.Clone())...).Add(ref.Clone()).Block(
		addStep(jen.Id("args")),
	))
	return out
}
