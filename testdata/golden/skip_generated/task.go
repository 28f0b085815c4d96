// Package skip_generated is a golden case: directives in files generated
// by other tools are ignored.
package skip_generated

import "context"

// Real is annotated in a hand-written file.
//
//queuemax:task
func Real(ctx context.Context) error { return nil }
