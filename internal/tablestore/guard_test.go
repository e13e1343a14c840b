package tablestore

import (
	"errors"
	"fmt"
	"testing"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/kv"
)

// TestBusy: the engine's conditions become the service's codes at the
// store's boundary: unavailable is ServerBusy (not taken, retry), an
// unknown outcome is OperationTimedOut (may or may not have applied), and
// an error already carrying a code keeps it.
func TestBusy(t *testing.T) {
	for _, c := range []struct {
		err  error
		want partita.Code
	}{
		{fmt.Errorf("pgkv: commit: %w", kv.ErrUnavailable), partita.CodeServerBusy},
		{fmt.Errorf("pgkv: commit: %w: connection reset", kv.ErrOutcomeUnknown), partita.CodeOperationTimedOut},
		{fmt.Errorf("pgkv: commit: %w", kv.ErrKeyTooLarge), partita.CodePropertyValueTooLarge},
		{&partita.Error{Code: partita.CodeTableNotFound, Err: kv.ErrOutcomeUnknown}, partita.CodeTableNotFound},
		{errors.New("other"), partita.CodeInternal},
	} {
		if got := partita.ErrorCode(busy(c.err)); got != c.want {
			t.Errorf("busy(%v) has code %s, want %s", c.err, got, c.want)
		}
	}
	var pe *partita.Error
	if err := busy(fmt.Errorf("x: %w", kv.ErrOutcomeUnknown)); !errors.As(err, &pe) || pe.Message != partita.MsgOperationTimedOut || !errors.Is(err, kv.ErrOutcomeUnknown) {
		t.Errorf("unknown outcome: %v (want the service's message, and the cause kept for the log)", err)
	}
}
