package tablestore

import (
	"context"
	"errors"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/kv"
)

// guard turns an unreachable store (kv.ErrUnavailable) into ServerBusy,
// which clients retry, at the one boundary every store call crosses.
type guard struct{ kv.DB }

func busy(err error) error {
	if err != nil && errors.Is(err, kv.ErrUnavailable) {
		var pe *partita.Error
		if !errors.As(err, &pe) {
			return &partita.Error{Code: partita.CodeServerBusy, Message: partita.MsgServerBusy, Err: err}
		}
	}
	return err
}

func (g guard) View(ctx context.Context, fn func(kv.Reader) error) error {
	return busy(g.DB.View(ctx, fn))
}

func (g guard) Update(ctx context.Context, fn func(kv.Txn) error) error {
	return busy(g.DB.Update(ctx, fn))
}

func (g guard) DeleteRange(ctx context.Context, start, end []byte) error {
	return busy(g.DB.DeleteRange(ctx, start, end))
}
