package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
)

var migrateCommand = &command{
	name:    "migrate",
	args:    "(--to-native | --to-queue-max) [DIR]",
	summary: "move a data directory to the native or the queue-max layout",
	help: `
Migrate moves a data directory (DIR, else --data-dir or DATA_DIR) to the
other layout. --to-native gives it queuemax's own layout, the default of a
new directory, where nothing on the hot path exists for queue-max's sake;
queue-max 0.2.0 must not open it afterwards. --to-queue-max gives it the
layout queue-max 0.2.0 can share at the same time as queuemax (open it
with --queue-max-compatible, or queuemax.LayoutQueueMax, from then on).

Each shard file moves in one transaction: jobs keep their IDs, and the
dead-letter queue, workflows, schedules and metadata stay with them. If
the command is interrupted, the directory refuses to open as half
migrated until the same command is run again, which finishes it. Stop
every process that uses the directory first: one that registers a live
worker there makes the command fail.`,
	run: runMigrate,
}

func runMigrate(r *runner, ctx context.Context, cmd *command, args []string) error {
	fs := r.newFlagSet(cmd.name)
	native := fs.Bool("to-native", false, "move to the native layout")
	queueMax := fs.Bool("to-queue-max", false, "move to the layout queue-max 0.2.0 shares")
	var dir string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		dir, args = args[0], args[1:]
	}
	if err := r.parse(fs, nil, args); err != nil {
		if err == errHelp {
			printCommandUsage(r.stdout, r.name, cmd, fs)
		}
		return err
	}
	switch rest := fs.Args(); {
	case len(rest) > 1 || len(rest) == 1 && dir != "":
		return usagef("migrate takes one data directory, got %q", strings.Join(append([]string{dir}, rest...), " "))
	case len(rest) == 1:
		dir = rest[0]
	}
	if *native == *queueMax {
		return usagef("migrate needs one of --to-native and --to-queue-max")
	}
	if r.dsn != "" {
		return usagef("migrate moves a data directory; a PostgreSQL queue (--dsn) has one layout")
	}
	cfg, _, err := r.config()
	if err != nil {
		return err
	}
	if dir == "" {
		dir = cfg.Dir
	}
	if err := checkQueueDir(dir, ""); err != nil {
		return err
	}
	to := sqlitestore.LayoutNative
	if *queueMax {
		to = sqlitestore.LayoutQueueMax
	}
	res, err := sqlitestore.MigrateLayout(ctx, sqlitestore.Options{Dir: dir, BusyTimeout: cfg.BusyTimeout}, to)
	if err != nil {
		return err
	}
	switch {
	case len(res.Converted) == 0:
		fmt.Fprintf(r.stdout, "data dir %s is in the %s layout already (%d %s)\n", dir, to, len(res.Already), plural(len(res.Already), "shard"))
	case len(res.Already) == 0:
		fmt.Fprintf(r.stdout, "moved data dir %s to the %s layout (%d %s)\n", dir, to, len(res.Converted), plural(len(res.Converted), "shard"))
	default:
		fmt.Fprintf(r.stdout, "moved data dir %s to the %s layout: %d %s now, %d moved by an earlier run\n",
			dir, to, len(res.Converted), plural(len(res.Converted), "shard"), len(res.Already))
	}
	return nil
}
