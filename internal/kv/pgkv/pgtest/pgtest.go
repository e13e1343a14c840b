// Package pgtest gives tests a fresh PostgreSQL database. The server comes
// from PARTITA_TEST_POSTGRES (a DSN with rights to create databases);
// scripts/test starts a throwaway cluster and sets it. Without it, tests
// that need PostgreSQL are skipped with a visible notice.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

// EnvVar names the admin DSN of the test server.
const EnvVar = "PARTITA_TEST_POSTGRES"

var notice sync.Once

// AdminDSN returns the server DSN, or skips the test when none is set.
func AdminDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(EnvVar)
	if dsn == "" {
		notice.Do(func() {
			fmt.Fprintf(os.Stderr, "NOTICE: %s is not set; PostgreSQL tests are skipped (scripts/test starts a throwaway cluster when PostgreSQL is installed)\n", EnvVar)
		})
		if os.Getenv("CI") != "" {
			tb.Fatalf("%s is not set in CI", EnvVar)
		}
		tb.Skipf("%s not set", EnvVar)
	}
	return dsn
}

// NewDatabase creates an empty database, drops it when the test ends, and
// returns its DSN.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	admin := AdminDSN(tb)
	var b [6]byte
	rand.Read(b[:])
	name := "partita_t_" + hex.EncodeToString(b[:])
	return CreateDatabase(tb, admin, name, true)
}

// CreateDatabase creates the named database if it does not exist and
// returns its DSN; drop removes it when the test ends.
func CreateDatabase(tb testing.TB, admin, name string, drop bool) string {
	tb.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatalf("connect %s: %v", EnvVar, err)
	}
	defer conn.Close(ctx)
	var exists bool
	conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists)
	if !exists {
		if _, err := conn.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()); err != nil {
			tb.Fatalf("create database: %v", err)
		}
	}
	if drop {
		tb.Cleanup(func() {
			c, err := pgx.Connect(context.Background(), admin)
			if err != nil {
				return
			}
			defer c.Close(context.Background())
			c.Exec(context.Background(), `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`)
		})
	}
	u, err := url.Parse(admin)
	if err != nil {
		tb.Fatalf("%s is not a URL: %v", EnvVar, err)
	}
	u.Path = "/" + name
	return u.String()
}
