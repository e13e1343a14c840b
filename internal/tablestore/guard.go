package tablestore

import (
	"context"
	"errors"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/kv"
)

// guard turns an unreachable store (kv.ErrUnavailable) into ServerBusy,
// which clients retry, and a write whose commit may or may not have
// applied (kv.ErrOutcomeUnknown) into OperationTimedOut, the service's
// answer for an operation that "may or may not have succeeded", at the one
// boundary every store call crosses. The HTTP layer gives them 503 and 500
// (httpapi/errors.go).
type guard struct{ kv.DB }

func busy(err error) error {
	var pe *partita.Error
	if err == nil || errors.As(err, &pe) {
		return err // an error that already carries the service's code keeps it
	}
	switch {
	case errors.Is(err, kv.ErrOutcomeUnknown):
		// Not ServerBusy: that says the request was not taken, and a
		// client that trusts it may apply the write twice.
		return &partita.Error{Code: partita.CodeOperationTimedOut, Message: partita.MsgOperationTimedOut, Err: err}
	case errors.Is(err, kv.ErrUnavailable):
		return &partita.Error{Code: partita.CodeServerBusy, Message: partita.MsgServerBusy, Err: err}
	case errors.Is(err, kv.ErrKeyTooLarge):
		// Not the service's limit but the engine's (PostgreSQL): a 400 that
		// says so, never a 500 that clients would retry.
		return &partita.Error{Code: partita.CodePropertyValueTooLarge, Message: msgKeyTooLargeForEngine, Err: err}
	}
	return err
}

// msgKeyTooLargeForEngine is partita's own message: the keys are within
// the service's limits, but not within what this engine can index.
const msgKeyTooLargeForEngine = "The PartitionKey and RowKey are too large for this server's storage engine to index (PostgreSQL: about 2,700 bytes together in UTF-8, after compression)."

func (g guard) View(ctx context.Context, fn func(kv.Reader) error) error {
	return busy(g.DB.View(ctx, fn))
}

func (g guard) Update(ctx context.Context, fn func(kv.Txn) error) error {
	return busy(g.DB.Update(ctx, fn))
}

func (g guard) DeleteRange(ctx context.Context, start, end []byte) error {
	return busy(g.DB.DeleteRange(ctx, start, end))
}

// condWriter returns the engine's one-statement conditional writer, if it
// has one, with unavailability mapped like every other call.
func (g guard) condWriter() (func(context.Context, kv.CondWrite) (bool, error), bool) {
	cw, ok := g.DB.(kv.CondWriter)
	if g.DB == nil || !ok {
		return nil, false
	}
	return func(ctx context.Context, w kv.CondWrite) (bool, error) {
		ok, err := cw.CondWrite(ctx, w)
		return ok, busy(err)
	}, true
}
