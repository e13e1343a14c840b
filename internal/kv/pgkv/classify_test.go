package pgkv

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/partita/partita/internal/kv"
)

// TestClassifyCodes: the SQLSTATEs that leave a write's fate unknown or
// say the server cannot take writes become kv.ErrUnavailable (503, which
// clients retry); serialization failures stay retryable and are not
// unavailability; a constraint violation is neither.
func TestClassifyCodes(t *testing.T) {
	for code, want := range map[string]bool{
		"08006": true,  // connection failure
		"57P01": true,  // admin shutdown
		"53300": true,  // too many connections
		"25006": true,  // read-only transaction: not the primary
		"40003": true,  // CockroachDB's ambiguous commit
		"40001": false, // serialization failure: retried, not unavailable
		"23505": false, // unique violation
	} {
		err := classify(&pgconn.PgError{Code: code})
		if got := errors.Is(err, kv.ErrUnavailable); got != want {
			t.Errorf("SQLSTATE %s: unavailable = %v, want %v", code, got, want)
		}
	}
	if err := classify(&pgconn.PgError{Code: "54000"}); !errors.Is(err, kv.ErrKeyTooLarge) || errors.Is(err, kv.ErrUnavailable) {
		t.Errorf("SQLSTATE 54000 (an index row past the btree's limit): %v, want kv.ErrKeyTooLarge", err)
	}
	if !retryable(&pgconn.PgError{Code: "40001"}) || retryable(&pgconn.PgError{Code: "40003"}) {
		t.Error("40001 must be retried and 40003 must not")
	}
}
