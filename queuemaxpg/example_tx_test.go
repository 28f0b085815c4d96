package queuemaxpg_test

import (
	"context"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxpg"
)

type welcomeArgs struct {
	UserID int64 `json:"user_id"`
}

// Example_enqueueTx creates a user and the job that welcomes them in one
// PostgreSQL transaction: the job exists if and only if the user does. It
// needs a PostgreSQL server (QUEUE_MAX_DSN), so it has no checked output;
// on the SQLite store the same call returns ErrTxUnsupported.
func Example_enqueueTx() {
	ctx := context.Background()
	dsn := os.Getenv("QUEUE_MAX_DSN") // postgres://user@host:5432/app
	st, err := queuemaxpg.Open(ctx, dsn, queuemaxpg.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := queuemax.Open(ctx, queuemax.Config{Store: st})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	// The generated stubs have the same methods: t.Welcome.DelayTx(ctx, tx, userID).
	welcome := queuemax.NewTask[welcomeArgs](c, "app.Welcome", queuemax.TaskOptions{})

	pool, err := pgxpool.New(ctx, dsn) // the application's own pool
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	tx, err := pool.Begin(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tx.Rollback(ctx) // a no-op after Commit

	var userID int64
	if err := tx.QueryRow(ctx, `INSERT INTO users (email) VALUES ($1) RETURNING id`, "ada@example.com").Scan(&userID); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := welcome.EnqueueTx(ctx, tx, welcomeArgs{UserID: userID}); err != nil {
		fmt.Println(err) // queuemax.ErrTxUnsupported on SQLite
		return
	}
	// Workers on every host are woken by the NOTIFY delivered at commit.
	if err := tx.Commit(ctx); err != nil {
		fmt.Println(err)
	}
}
