// Package workflow is the order workflow of the README: charge the card,
// ship the parcel once the charge went through, then mail the customer the
// receipt and the tracking number. Mail takes the results of Charge and
// Ship as its parameters through the generated typed layer (Step,
// queuemax.From), so binding a parameter to a step of another result type
// does not compile.
//
// The tasks reach the outside world through the context: put a [Mailer]
// in the context passed to queuemax.Client.Run with [WithMailer].
package workflow

//go:generate go tool queuemax-gen
