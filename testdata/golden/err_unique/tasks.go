// Package err_unique is a golden error case: bad unique options.
package err_unique

import "context"

// ByName names an unknown uniqueness.
//
//queuemax:task unique=name
func ByName(ctx context.Context, name string) error { return nil }

// Short has a period under a second and forgets a required status.
//
//queuemax:task unique=args unique_for=500ms unique_states=pending,completed
func Short(ctx context.Context) error { return nil }

// Lonely lists statuses without a uniqueness.
//
//queuemax:task unique_states=pending,scheduled,processing,failed
func Lonely(ctx context.Context) error { return nil }

// Tick is periodic, whose slots fire once already.
//
//queuemax:periodic every=1h unique_for=1h
func Tick(ctx context.Context) error { return nil }
