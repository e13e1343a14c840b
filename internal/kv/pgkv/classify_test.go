package pgkv

import (
	"context"
	"errors"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/partita/partita/internal/kv"
)

// TestClassifyCodes: the SQLSTATEs that say the server cannot take writes
// become kv.ErrUnavailable (503, which clients retry), and so does
// CockroachDB's 40003 outside a commit (a statement of a transaction that
// is then rolled back; at a commit it is classifyCommit's); serialization
// failures stay retryable and are not unavailability; a constraint
// violation is neither.
func TestClassifyCodes(t *testing.T) {
	for code, want := range map[string]bool{
		"08006": true,  // connection failure
		"57P01": true,  // admin shutdown
		"53300": true,  // too many connections
		"25006": true,  // read-only transaction: not the primary
		"40003": true,  // CockroachDB's ambiguous result, outside a commit
		"25P03": true,  // idle_in_transaction_session_timeout ended the session
		"25P04": true,  // transaction_timeout (PostgreSQL 17) ended the session
		"55P03": true,  // lock_timeout: a statement waited too long for a row
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

// TestClassifyCommit: a commit (or an autocommit statement) whose bytes
// left and whose answer never came is kv.ErrOutcomeUnknown, whatever pgx
// calls the failure (an unexpected EOF, a reset, or "conn closed", which
// pgx also reports as safe to retry); so is 40003. One that never left,
// one the server answered with an error, pgx's "resulted in rollback" and
// a deadline keep their classes: nothing committed, or already 500
// OperationTimedOut.
func TestClassifyCommit(t *testing.T) {
	bg := context.Background()
	expired, cancel := context.WithDeadline(bg, time.Now().Add(-time.Second))
	defer cancel()
	connClosed := safeErr{errors.New("conn closed")}
	for _, c := range []struct {
		name                 string
		ctx                  context.Context
		err                  error
		sent                 bool
		unknown, unavailable bool
	}{
		{"eof after sending", bg, io.ErrUnexpectedEOF, true, true, false},
		{"reset after sending", bg, syscall.ECONNRESET, true, true, false},
		{"pgx's conn closed after sending", bg, connClosed, true, true, false},
		{"40003", bg, &pgconn.PgError{Code: "40003"}, true, true, false},
		{"conn closed before sending", bg, connClosed, false, false, true},
		{"refused before sending", bg, syscall.ECONNREFUSED, false, false, true},
		{"the server ended the session", bg, &pgconn.PgError{Code: "57P01"}, true, false, true},
		{"serialization failure at commit", bg, &pgconn.PgError{Code: "40001"}, true, false, false},
		{"rolled back", bg, pgx.ErrTxCommitRollback, true, false, false},
		{"deadline", expired, io.ErrUnexpectedEOF, true, false, false},
	} {
		err := classifyCommit(c.ctx, c.err, c.sent)
		if got := errors.Is(err, kv.ErrOutcomeUnknown); got != c.unknown {
			t.Errorf("%s: %v: outcome unknown = %v, want %v", c.name, err, got, c.unknown)
		}
		if got := errors.Is(err, kv.ErrUnavailable); got != c.unavailable {
			t.Errorf("%s: %v: unavailable = %v, want %v", c.name, err, got, c.unavailable)
		}
	}
	if err := classifyCommit(expired, io.ErrUnexpectedEOF, true); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("past the deadline: %v, want context.DeadlineExceeded", err)
	}
}

// safeErr is an error pgconn.SafeToRetry calls safe to retry.
type safeErr struct{ error }

func (safeErr) SafeToRetry() bool { return true }

// TestDSNSetsPoolSize: pool_max_conns counts when the DSN sets it, in URL
// or key=value form, and not when the text is only inside another value
// (a password), which a substring test took for it.
func TestDSNSetsPoolSize(t *testing.T) {
	for dsn, want := range map[string]bool{
		"postgres://u@h/db?pool_max_conns=4":                 true,
		"postgres://u@h/db?sslmode=disable&pool_max_conns=4": true,
		"host=h user=u pool_max_conns=4":                     true,
		"postgres://u@h/db":                                  false,
		"postgres://u:pool_max_conns@h/db":                   false,
		"host=h user=u password=pool_max_conns":              false,
	} {
		if got := dsnSetsPoolSize(dsn); got != want {
			t.Errorf("dsnSetsPoolSize(%q) = %v, want %v", dsn, got, want)
		}
	}
}
