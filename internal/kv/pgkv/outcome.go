package pgkv

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/partita/partita/internal/kv"
)

// classifyCommit is classifyCtx for the call that commits a write: a
// transaction's COMMIT, or a conditional write's one statement, which
// commits by itself. sent tells whether any of the call's bytes left for
// the server.
//
// Once they have, a failure without an answer of the server's leaves the
// outcome unknown: the server may have committed and lost only the
// answer (the connection broke, the host went away). That is
// kv.ErrOutcomeUnknown (500 OperationTimedOut: "may or may not have
// succeeded"), never kv.ErrUnavailable (503 ServerBusy, which says the
// request was not taken and invites a retry that could apply it twice).
// So is CockroachDB's 40003, whatever was sent. The rest is what
// classifyCtx makes it: a call never sent (the connection was already
// broken, or the pool could not connect) is unavailable; an error the
// server answered (a PgError: it refused or aborted the transaction, or
// ended the session before reading the commit) or pgx's "commit
// unexpectedly resulted in rollback" means nothing was committed; a
// deadline is context.DeadlineExceeded, which is 500 OperationTimedOut
// already.
//
// Whether anything was sent is counted on the socket (sentConn) rather
// than read from pgx's errors: pgx v5.12 reports a COMMIT whose answer
// never came as "conn closed", which it also calls safe to retry, the
// same as a commit on a connection closed before the call. Bytes of the
// call's preliminaries (pgx deallocating statements it invalidated, or
// preparing a conditional write's statement in a round trip of its own)
// count as sent too: the outcome is then called unknown where it was in
// fact known, never the reverse.
func classifyCommit(ctx context.Context, err error, sent bool) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	answered := errors.As(err, &pgErr)
	switch {
	case answered && pgErr.Code == sqlstateCompletionUnknown:
		return fmt.Errorf("%w: %v", kv.ErrOutcomeUnknown, err)
	case !sent || answered || ctx.Err() != nil || errors.Is(err, pgx.ErrTxCommitRollback):
		return classifyCtx(ctx, err)
	}
	return fmt.Errorf("%w: the connection failed after the commit was sent: %v", kv.ErrOutcomeUnknown, err)
}

// sentConn is a connection to the database that counts the bytes it has
// handed to the network.
type sentConn struct {
	net.Conn
	n atomic.Uint64
}

func (c *sentConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.n.Add(uint64(n))
	return n, err
}

// bytesSent returns how many bytes c has sent. A connection this package
// did not dial reports one more each time, so that a commit on it is
// always taken as sent.
func bytesSent(c *pgx.Conn) uint64 {
	nc := c.PgConn().Conn()
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	if sc, ok := nc.(*sentConn); ok {
		return sc.n.Load()
	}
	return unknownSent.Add(1)
}

var unknownSent atomic.Uint64
