package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// The steps below let a driver other than Run compose a run of its own on
// the runner's table: the growth run of internal/cmd/benchcompare loads one
// table in steps and measures it between them.

// Config is the runner's configuration.
func (r *Runner) Config() Config { return r.cfg }

// Endpoint is the base URL the runner drives.
func (r *Runner) Endpoint() string { return r.c.Base() }

// Log is where the runner writes progress and notes.
func (r *Runner) Log() io.Writer { return r.log }

// TableSize is how many entities the runner's table holds as far as the
// runner knows.
func (r *Runner) TableSize() int64 { return r.tableSize.Load() }

// CreateTable creates the runner's table, which must be new, and warms the
// connections.
func (r *Runner) CreateTable(ctx context.Context) error {
	if r.cfg.Preloaded != 0 {
		return errors.New("a table of its own: drop --preloaded")
	}
	if err := r.c.CreateTable(ctx, r.table, false); err != nil {
		return fmt.Errorf("create table %s: %w", r.table, err)
	}
	r.prime(ctx)
	return nil
}

// Load writes entities [from, to) of the key layout with $batch, for at
// most timeout, and from then on counts 0..to-1 as the entities that exist.
func (r *Runner) Load(ctx context.Context, from, to uint64, timeout time.Duration) Result {
	r.loadFrom, r.loadTo = from, to
	res := r.runWorkload(ctx, "load", 0, timeout, false)
	r.preloaded = to
	r.inserted = nil
	r.nextNew = to
	return res
}

// DropTable deletes the table as one timed operation.
func (r *Runner) DropTable(ctx context.Context) Result { return r.dropTable(ctx) }

// DeleteTableUnlessDropped deletes the table unless DropTable did, waiting
// at most 10 minutes and even when ctx has ended.
func (r *Runner) DeleteTableUnlessDropped(ctx context.Context) {
	if r.dropped {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Minute)
	defer cancel()
	r.c.DeleteTable(dctx, r.table)
}
