// Package tasks is a realistic annotated package: an email sender, a
// monthly report that returns a result, a webhook call whose HTTP status
// errors say whether to retry, a periodic cleanup and a periodic ping to
// a monitoring service.
//
// Each task is a plain function with a //queuemax: directive;
// queuemax_gen.go, written by go generate, adds the typed handles (New),
// the handlers (Handlers) and the payload structs. Dependencies reach the
// tasks through the context: put a [Deps] in the context passed to
// queuemax.Client.Run (and to Call) with [WithDeps].
package tasks

//go:generate go tool queuemax-gen
