package queuemax

import (
	"context"
	"os"

	"github.com/queuemax/queuemax/runtime/engine"
)

// RunUntilSignal is Run for a program's main: it runs c's workers until
// ctx ends or one of sigs arrives (SIGINT and SIGTERM when none are
// given), then drains as Run does: claiming stops and running jobs get
// Config.DrainTimeout to finish. A second signal during the drain stops at
// once, as the queuemax worker command does: running jobs are cancelled
// and released to pending without spending an attempt, and RunUntilSignal
// returns within ShutdownGrace. The signals stay caught until it returns;
// a signal after that has its default effect again. It returns what Run
// returns: nil after a drain caused by a signal or by ctx.
//
//	c, err := queuemax.Open(ctx, queuemax.Config{Dir: "data", Handlers: tasks.Handlers()})
//	...
//	defer c.Close()
//	return c.RunUntilSignal(ctx) // Ctrl-C drains; Ctrl-C again releases and exits
func (c *Client) RunUntilSignal(ctx context.Context, sigs ...os.Signal) error {
	return engine.RunUntilSignal(ctx, sigs, c.Run, c.Stop, c.log, c.cfg.DrainTimeout)
}
