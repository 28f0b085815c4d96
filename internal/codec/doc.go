// Package codec is the strict payload codec behind queuemax.DecodeArgs,
// DecodePayload, PayloadSchema and CheckSchema: one rule for what a task's
// payload may hold, used by the enqueue side and the worker alike (see
// docs/payloads.md). Not API: import github.com/queuemax/queuemax instead.
package codec
