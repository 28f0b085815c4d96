// Package steps shows job steps: a task whose handler is three resumable
// steps (charge the card, ship the parcel, mail the customer) and one that
// imports rows with a cursor. A step that completed is never run again for
// the same job: when the mail server fails, the retry mails the customer
// without charging the card a second time. See docs/steps.md.
//
// The tasks reach the outside world through the context: put a [Shop] in
// the context passed to queuemax.Client.Run with [WithShop].
package steps

//go:generate go tool queuemax-gen
