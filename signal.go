package queuemax

import (
	"context"
	"os"
	"os/signal"
	"syscall"
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
	if len(sigs) == 0 {
		sigs = []os.Signal{os.Interrupt, syscall.SIGTERM}
	}
	caught := make(chan os.Signal, 2)
	signal.Notify(caught, sigs...)
	defer signal.Stop(caught)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	for {
		select {
		case err := <-done:
			return err
		case sig := <-caught:
			if runCtx.Err() == nil {
				c.log.Info("queuemax: signal received: draining; signal again to release running jobs and stop now",
					"signal", sig.String(), "drain_timeout", c.cfg.DrainTimeout.String())
				cancel()
				continue
			}
			c.log.Warn("queuemax: second signal: releasing running jobs to pending (no attempt spent)", "signal", sig.String())
			now, abort := context.WithCancel(context.Background())
			abort()
			go c.Stop(now) // ctx already done: end the drain at once
		}
	}
}
