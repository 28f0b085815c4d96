package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

// The code generated for one task: its args type, handle and handler.

// task renders everything generated for one task, in this order:
//
//	// SendEmailArgs is the payload of SendEmail (email.go:14).
//	type SendEmailArgs struct {
//		To string `json:"to"`
//	}
//	var sendEmailOptions = queuemax.TaskOptions{...}
//	func sendEmailFunc(ctx context.Context, a SendEmailArgs) error { return SendEmail(ctx, a.To) }
//	type SendEmailTask struct{ task queuemax.Task[SendEmailArgs] }
//	func (t SendEmailTask) Name() string
//	func (t SendEmailTask) Client() *queuemax.Client
//	func (t SendEmailTask) Stats(ctx context.Context) (queuemax.TaskStats, error)
//	func (t SendEmailTask) Delay(ctx context.Context, to string) (queuemax.JobID, error)
//	func (t SendEmailTask) DelayTx(ctx context.Context, tx queuemax.Tx, to string) (queuemax.JobID, error)
//	func (t SendEmailTask) ScheduleAt(ctx context.Context, at time.Time, to string) (queuemax.JobID, error)
//	func (t SendEmailTask) ScheduleAtTx(ctx context.Context, tx queuemax.Tx, at time.Time, to string) (queuemax.JobID, error)
//	func (t SendEmailTask) ScheduleIn(ctx context.Context, d time.Duration, to string) (queuemax.JobID, error)
//	func (t SendEmailTask) ScheduleInTx(ctx context.Context, tx queuemax.Tx, d time.Duration, to string) (queuemax.JobID, error)
//	func (t SendEmailTask) Map(ctx context.Context, to []string) ([]queuemax.JobID, error)
//	func (t SendEmailTask) MapTx(ctx context.Context, tx queuemax.Tx, to []string) ([]queuemax.JobID, error)
//	func (t SendEmailTask) MapArgs(ctx context.Context, args []SendEmailArgs) ([]queuemax.JobID, error)
//	func (t SendEmailTask) MapArgsTx(ctx context.Context, tx queuemax.Tx, args []SendEmailArgs) ([]queuemax.JobID, error)
//	func (t SendEmailTask) With(o queuemax.Opts) SendEmailTask
//	func (t SendEmailTask) Call(ctx context.Context, to string) error
//	func (t ReportTask) Result(ctx context.Context, id queuemax.JobID) (Report, error)  // (T, error) tasks only
//	func (t SendEmailTask) Step(wf *queuemax.Workflow, stepName string, to queuemax.Input[string], stepOpts ...queuemax.StepOption) queuemax.StepRef[queuemax.NoResult]
//	func (t SendEmailTask) StepArgs(wf *queuemax.Workflow, stepName string, args SendEmailArgs, stepOpts ...queuemax.StepOption) queuemax.StepRef[queuemax.NoResult]
//	var _ func(context.Context, string) error = SendEmail
func task(t taskSpec) []jen.Code {
	n := namesOf(t)
	src := t.src()
	recv := jen.Id("t").Id(n.stub)
	ctx := jen.Id("ctx").Qual("context", "Context")
	txParam := func() jen.Code { return jen.Id("tx").Add(qm("Tx")) }

	// params renders the task's parameters as method parameters.
	params := func(lead ...jen.Code) []jen.Code {
		out := append([]jen.Code{ctx}, lead...)
		for _, p := range t.Params {
			out = append(out, jen.Id(p.Local).Add(typ(p.Type)))
		}
		return out
	}
	// argsLit renders SendEmailArgs{To: to, Subject: subject}, taking
	// the first field from first when it is not nil.
	argsLit := func(first jen.Code) jen.Code {
		return jen.Id(n.args).ValuesFunc(func(g *jen.Group) {
			for i, p := range t.Params {
				v := jen.Code(jen.Id(p.Local))
				if i == 0 && first != nil {
					v = first
				}
				g.Id(p.Field).Op(":").Add(v)
			}
		})
	}
	jobID := qm("JobID")
	result := jen.Error()
	if t.Result != nil {
		result = jen.Parens(jen.List(typ(*t.Result), jen.Error()))
	}

	kind := "task"
	if t.Periodic {
		kind = "periodic task"
	}
	var out []jen.Code

	// type SendEmailArgs struct{ To string `json:"to"` }
	out = append(out, doc(
		fmt.Sprintf("%s is the payload of %s (%s).", n.args, t.Func, src),
		"",
		"Each field holds one parameter after ctx; a job stores the payload as",
		"a JSON object with snake_case keys. Every key is required except those",
		"of pointer parameters, and unknown keys and wrong types are refused at",
		"enqueue and at run time (see [queuemax.DecodeArgs]).",
	).Type().Id(n.args).StructFunc(func(g *jen.Group) {
		for _, p := range t.Params {
			g.Id(p.Field).Add(typ(p.Type)).Tag(map[string]string{"json": p.JSON})
		}
	}))

	// var sendEmailOptions = queuemax.TaskOptions{...}
	out = append(out, doc(
		fmt.Sprintf("%s are the defaults of %s from its annotation (%s).", n.options, t.Func, src),
	).Var().Id(n.options).Op("=").Add(options(t)))

	// func sendEmailFunc(ctx context.Context, a SendEmailArgs) error
	call := []jen.Code{jen.Id("ctx")}
	for _, p := range t.Params {
		call = append(call, jen.Id("a").Dot(p.Field))
	}
	out = append(out, doc(
		fmt.Sprintf("%s calls %s (%s) with the fields of its payload.", n.fn, t.Func, src),
	).Func().Id(n.fn).Params(ctx, jen.Id("a").Id(n.args)).Add(result).Block(
		jen.Return(jen.Id(t.Func).Call(call...)),
	))

	// type SendEmailTask struct{ task queuemax.Task[SendEmailArgs] }
	out = append(out, doc(append([]string{
		fmt.Sprintf("%s enqueues %s (%s).", n.stub, t.Func, src),
		"",
		"Get one bound to a client from [New]. An unbound handle (the zero",
		"value) returns [queuemax.ErrNotBound] from its enqueue methods, while",
		"Call still works. A handle is a small value, safe to copy and to use",
		"concurrently. Its enqueue methods are Delay, ScheduleAt, ScheduleIn,",
		"Map and MapArgs, each with a Tx form; the generic [queuemax.Task] it",
		"wraps is not exposed, so these are the only ones. Step and StepArgs",
		"add the task as a step of a [queuemax.Workflow].",
	}, uniqueNote(t)...)...).Type().Id(n.stub).Struct(jen.Id("task").Add(qm("Task").Types(jen.Id(n.args)))))

	// Name, Client, Stats
	out = append(out, doc(
		fmt.Sprintf("Name returns the task name stored in each %s job row.", t.Func),
	).Func().Params(recv.Clone()).Id("Name").Params().String().Block(
		jen.Return(jen.Id("t").Dot("task").Dot("Name").Call()),
	))
	out = append(out, doc(
		"Client returns the client the handle is bound to, or nil.",
	).Func().Params(recv.Clone()).Id("Client").Params().Op("*").Add(qm("Client")).Block(
		jen.Return(jen.Id("t").Dot("task").Dot("Client").Call()),
	))
	out = append(out, doc(
		fmt.Sprintf("Stats returns the counts of %s jobs by status. It returns", t.Func),
		"[queuemax.ErrNotBound] for an unbound handle.",
	).Func().Params(recv.Clone()).Id("Stats").Params(ctx).Params(qm("TaskStats"), jen.Error()).Block(
		jen.Return(jen.Id("t").Dot("task").Dot("Stats").Call(jen.Id("ctx"))),
	))

	// Delay, DelayTx
	out = append(out, doc(
		fmt.Sprintf("Delay enqueues one %s job to run as soon as a worker is free and", t.Func),
		"returns its ID. The job is durable once Delay returns nil; Delay does not",
		"wait for it to run.",
		"",
		"Delay returns [queuemax.ErrNotBound] for an unbound handle,",
		"[queuemax.ErrClosed] after [queuemax.Client.Close], or ctx's error if",
		"ctx ends first. It is safe for concurrent use.",
	).Func().Params(recv.Clone()).Id("Delay").Params(params()...).Params(jobID.Clone(), jen.Error()).Block(
		jen.Return(jen.Id("t").Dot("task").Dot("Enqueue").Call(jen.Id("ctx"), argsLit(nil))),
	))
	out = append(out, doc(
		fmt.Sprintf("DelayTx enqueues one %s job inside tx, the application's open", t.Func),
		"transaction (a pgx.Tx or a *sql.Tx of the pgx stdlib driver), and returns",
		"its ID: the job exists if and only if tx commits. On the SQLite store it",
		"returns [queuemax.ErrTxUnsupported]; see [queuemax.Client.EnqueueTx].",
	).Func().Params(recv.Clone()).Id("DelayTx").Params(params(txParam())...).Params(jobID.Clone(), jen.Error()).Block(
		jen.Return(jen.Id("t").Dot("task").Dot("EnqueueTx").Call(jen.Id("ctx"), jen.Id("tx"), argsLit(nil))),
	))

	// ScheduleAt, ScheduleAtTx
	out = append(out, doc(
		fmt.Sprintf("ScheduleAt enqueues one %s job that becomes ready at at, and", t.Func),
		"returns its ID. The job is durable once ScheduleAt returns nil.",
	).Func().Params(recv.Clone()).Id("ScheduleAt").Params(params(jen.Id("at").Qual("time", "Time"))...).Params(jobID.Clone(), jen.Error()).Block(
		jen.Return(jen.Id("t").Dot("task").Dot("EnqueueAt").Call(jen.Id("ctx"), jen.Id("at"), argsLit(nil))),
	))
	out = append(out, doc(
		fmt.Sprintf("ScheduleAtTx enqueues one %s job inside tx that becomes ready at", t.Func),
		"at, and returns its ID; the job exists if and only if tx commits (see",
		"DelayTx).",
	).Func().Params(recv.Clone()).Id("ScheduleAtTx").Params(params(txParam(), jen.Id("at").Qual("time", "Time"))...).Params(jobID.Clone(), jen.Error()).Block(
		jen.Return(jen.Id("t").Dot("task").Dot("EnqueueAtTx").Call(jen.Id("ctx"), jen.Id("tx"), jen.Id("at"), argsLit(nil))),
	))

	// ScheduleIn, ScheduleInTx
	out = append(out, doc(
		fmt.Sprintf("ScheduleIn enqueues one %s job that becomes ready after d, and", t.Func),
		"returns its ID. The job is durable once ScheduleIn returns nil.",
	).Func().Params(recv.Clone()).Id("ScheduleIn").Params(params(jen.Id("d").Qual("time", "Duration"))...).Params(jobID.Clone(), jen.Error()).Block(
		jen.Return(jen.Id("t").Dot("task").Dot("EnqueueIn").Call(jen.Id("ctx"), jen.Id("d"), argsLit(nil))),
	))
	out = append(out, doc(
		fmt.Sprintf("ScheduleInTx enqueues one %s job inside tx that becomes ready d", t.Func),
		"after this call, and returns its ID; the job exists if and only if tx",
		"commits (see DelayTx).",
	).Func().Params(recv.Clone()).Id("ScheduleInTx").Params(params(txParam(), jen.Id("d").Qual("time", "Duration"))...).Params(jobID.Clone(), jen.Error()).Block(
		jen.Return(jen.Id("t").Dot("task").Dot("EnqueueInTx").Call(jen.Id("ctx"), jen.Id("tx"), jen.Id("d"), argsLit(nil))),
	))

	// Map, MapTx fan out over the first parameter.
	if len(t.Params) > 0 {
		first := t.Params[0]
		mapParams := func(lead ...jen.Code) []jen.Code {
			out := append([]jen.Code{ctx}, lead...)
			out = append(out, jen.Id(first.Local).Index().Add(typ(first.Type)))
			for _, p := range t.Params[1:] {
				out = append(out, jen.Id(p.Local).Add(typ(p.Type)))
			}
			return out
		}
		mapBody := func(call jen.Code) []jen.Code {
			return []jen.Code{
				jen.Id("args").Op(":=").Make(jen.Index().Id(n.args), jen.Len(jen.Id(first.Local))),
				jen.For(jen.List(jen.Id("i"), jen.Id("v")).Op(":=").Range().Id(first.Local)).Block(
					jen.Id("args").Index(jen.Id("i")).Op("=").Add(argsLit(jen.Id("v"))),
				),
				jen.Return(call),
			}
		}
		out = append(out, doc(
			fmt.Sprintf("Map enqueues one %s job per element of %s, the other parameters", t.Func, first.Local),
			"fixed, and returns their IDs in order. The jobs are stored in one",
			"transaction per shard: if any is invalid, none is stored.",
		).Func().Params(recv.Clone()).Id("Map").Params(mapParams()...).Params(jen.Index().Add(jobID.Clone()), jen.Error()).Block(
			mapBody(jen.Id("t").Dot("task").Dot("EnqueueMany").Call(jen.Id("ctx"), jen.Id("args")))...,
		))
		out = append(out, doc(
			fmt.Sprintf("MapTx enqueues one %s job per element of %s inside tx, the other", t.Func, first.Local),
			"parameters fixed, and returns their IDs in order; the jobs exist if and",
			"only if tx commits (see DelayTx). If any is invalid, none is written.",
		).Func().Params(recv.Clone()).Id("MapTx").Params(mapParams(txParam())...).Params(jen.Index().Add(jobID.Clone()), jen.Error()).Block(
			mapBody(jen.Id("t").Dot("task").Dot("EnqueueManyTx").Call(jen.Id("ctx"), jen.Id("tx"), jen.Id("args")))...,
		))
	}

	// MapArgs, MapArgsTx
	out = append(out, doc(
		fmt.Sprintf("MapArgs enqueues one %s job per payload and returns their IDs in", t.Func),
		"order. The jobs are stored in one transaction per shard: if any is",
		"invalid, none is stored.",
	).Func().Params(recv.Clone()).Id("MapArgs").Params(ctx, jen.Id("args").Index().Id(n.args)).Params(jen.Index().Add(jobID.Clone()), jen.Error()).Block(
		jen.Return(jen.Id("t").Dot("task").Dot("EnqueueMany").Call(jen.Id("ctx"), jen.Id("args"))),
	))
	out = append(out, doc(
		fmt.Sprintf("MapArgsTx enqueues one %s job per payload inside tx and returns", t.Func),
		"their IDs in order; the jobs exist if and only if tx commits (see",
		"DelayTx). If any is invalid, none is written.",
	).Func().Params(recv.Clone()).Id("MapArgsTx").Params(ctx, txParam(), jen.Id("args").Index().Id(n.args)).Params(jen.Index().Add(jobID.Clone()), jen.Error()).Block(
		jen.Return(jen.Id("t").Dot("task").Dot("EnqueueManyTx").Call(jen.Id("ctx"), jen.Id("tx"), jen.Id("args"))),
	))

	// DelayResult, MapArgsResults: only for unique tasks, whose enqueue may
	// store nothing (see queuemax.EnqueueResult).
	//
	//	func (t SendEmailTask) DelayResult(ctx context.Context, to string) (queuemax.EnqueueResult, error)
	//	func (t SendEmailTask) MapArgsResults(ctx context.Context, args []SendEmailArgs) ([]queuemax.EnqueueResult, error)
	if isUnique(t) {
		out = append(out, doc(
			fmt.Sprintf("DelayResult is Delay for the unique task %s, reporting whether the", t.Func),
			"job was a duplicate: then nothing was stored and the result's ID is the",
			"stored job's that holds its unique key (Delay returns that ID with a",
			"nil error).",
		).Func().Params(recv.Clone()).Id("DelayResult").Params(params()...).Params(qm("EnqueueResult"), jen.Error()).Block(
			jen.Return(jen.Id("t").Dot("task").Dot("EnqueueResult").Call(jen.Id("ctx"), argsLit(nil))),
		))
		out = append(out, doc(
			fmt.Sprintf("MapArgsResults is MapArgs for the unique task %s, reporting per job", t.Func),
			"whether it was a duplicate; duplicates are not errors, the other jobs",
			"are stored.",
		).Func().Params(recv.Clone()).Id("MapArgsResults").Params(ctx, jen.Id("args").Index().Id(n.args)).Params(jen.Index().Add(qm("EnqueueResult")), jen.Error()).Block(
			jen.Return(jen.Id("t").Dot("task").Dot("EnqueueManyResults").Call(jen.Id("ctx"), jen.Id("args"))),
		))
	}

	// With
	out = append(out, doc(
		"With returns a copy of t whose enqueues apply o (priority, retries,",
		"partition key, run-at) on top of the task's defaults and earlier",
		"overrides. t itself is unchanged.",
	).Func().Params(recv.Clone()).Id("With").Params(jen.Id("o").Add(qm("Opts"))).Id(n.stub).Block(
		jen.Return(jen.Id(n.stub).Values(jen.Id("t").Dot("task").Dot("With").Call(jen.Id("o")))),
	))

	// Call
	callFn, callDoc := "Call", "returns its error"
	if t.Result != nil {
		callFn, callDoc = "CallResult", "returns its result"
	}
	out = append(out, doc(
		fmt.Sprintf("Call runs %s synchronously in this goroutine and %s,", t.Func, callDoc),
		"after a round trip of the arguments through the JSON codec workers use,",
		"so what works with Call works in a worker. It enqueues nothing and",
		fmt.Sprintf("works on an unbound handle; the %s's timeout bounds ctx.", kind),
	).Func().Params(recv.Clone()).Id("Call").Params(params()...).Add(result.Clone()).Block(
		jen.Return(qm(callFn).Call(jen.Id("ctx"), jen.Id(n.options), jen.Id(n.fn), argsLit(nil))),
	))

	// Result
	if t.Result != nil {
		out = append(out, doc(
			fmt.Sprintf("Result returns the stored result of the completed %s job id. It", t.Func),
			"returns [queuemax.ErrNoResult] while the job has not completed and",
			"[queuemax.ErrJobNotFound] once it is gone.",
		).Func().Params(recv.Clone()).Id("Result").Params(ctx, jen.Id("id").Add(jobID.Clone())).Add(result.Clone()).Block(
			jen.Return(qm("Result").Types(typ(*t.Result)).Call(jen.Id("ctx"), jen.Id("t").Dot("Client").Call(), jen.Id("id"))),
		))
	}

	// Step, StepArgs
	out = append(out, workflowMethods(t, n)...)

	// var _ func(context.Context, string) error = SendEmail
	guard := []jen.Code{jen.Qual("context", "Context")}
	for _, p := range t.Params {
		guard = append(guard, typ(p.Type))
	}
	out = append(out, doc(
		fmt.Sprintf("%s must keep the signature this file was generated from (%s):", t.Func, src),
		"after changing it, run go generate.",
	).Var().Id("_").Func().Params(guard...).Add(result.Clone()).Op("=").Id(t.Func))
	return out
}
