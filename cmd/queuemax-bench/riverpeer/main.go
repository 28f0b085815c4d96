// Command riverpeer measures River's InsertMany on a PostgreSQL server, as
// the peer that queuemax-bench -store postgres compares queuemax's batch
// enqueue with. It is a module of its own so that River is never a
// dependency of queuemax: queuemax-bench runs it with go run and reads
// the one JSON line it prints.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

type noopArgs struct {
	N int `json:"n"`
}

func (noopArgs) Kind() string { return "noop" }

// result is what the bench reads.
type result struct {
	River      string  `json:"river"`
	InsertMany float64 `json:"insert_many"` // jobs/s, batches of -batch
	Jobs       int     `json:"jobs"`
}

func main() {
	dsn := flag.String("dsn", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "the PostgreSQL server")
	jobs := flag.Int("jobs", 200000, "jobs to insert")
	batch := flag.Int("batch", 1000, "jobs per InsertMany call")
	fast := flag.Bool("fast", false, "InsertManyFast (COPY, no rows returned) instead of InsertMany")
	flag.Parse()
	if err := run(context.Background(), *dsn, *jobs, *batch, *fast); err != nil {
		fmt.Fprintln(os.Stderr, "riverpeer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dsn string, jobs, batch int, fast bool) error {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	schema := fmt.Sprintf("qmbench_river_%d_%d", os.Getpid(), rand.Uint32())
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return err
	}
	defer pool.Exec(context.WithoutCancel(ctx), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	driver := riverpgxv5.New(pool)
	mig, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema})
	if err != nil {
		return err
	}
	if _, err := mig.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	client, err := river.NewClient(driver, &river.Config{Schema: schema})
	if err != nil {
		return err
	}
	params := func(from, n int) []river.InsertManyParams {
		ps := make([]river.InsertManyParams, n)
		for i := range ps {
			ps[i] = river.InsertManyParams{Args: noopArgs{N: from + i}}
		}
		return ps
	}
	insert := func(ps []river.InsertManyParams) error {
		if fast {
			_, err := client.InsertManyFast(ctx, ps)
			return err
		}
		_, err := client.InsertMany(ctx, ps)
		return err
	}
	// Warm the pool's connections and prepared statements, untimed.
	if err := insert(params(0, batch)); err != nil {
		return err
	}
	start := time.Now()
	for done := 0; done < jobs; {
		k := min(batch, jobs-done)
		if err := insert(params(done, k)); err != nil {
			return err
		}
		done += k
	}
	d := time.Since(start)
	return json.NewEncoder(os.Stdout).Encode(result{River: "v0.51.2", InsertMany: float64(jobs) / d.Seconds(), Jobs: jobs})
}
