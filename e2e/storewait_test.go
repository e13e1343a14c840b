package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitingLine is what partita logs while it waits for a PostgreSQL store
// that it cannot reach yet (serve's openPostgres).
const waitingLine = "database not reachable yet"

// waitForLog waits up to d for s to appear n times in p's log.
func waitForLog(t *testing.T, p *proc, s string, n int, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); strings.Count(p.stderr(), s) < n; time.Sleep(50 * time.Millisecond) {
		select {
		case <-p.done:
			t.Fatalf("partita exited (status %d) before logging %q:\n%s", p.cmd.ProcessState.ExitCode(), s, p.stderr())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("partita did not log %q within %v:\n%s", s, d, p.stderr())
		}
	}
}

// unusedDSN is a DSN of a port where nothing listens.
func unusedDSN(t *testing.T) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", freePort(t))
}

// TestStoreWait: partita started before its database (docker compose
// starting both at once) waits for it instead of exiting: it is started
// against a port where nothing listens yet, PostgreSQL is started there
// once partita has logged that it is waiting, and partita must then
// serve, and store, a write. It exited with status 2 at once. A database
// that refuses partita for good, a wrong password or a database that does
// not exist, still ends the start at once, with the server's reason,
// rather than after --store-wait.
func TestStoreWait(t *testing.T) {
	pg := newPGServers(t)
	n := pg.newDir("primary", freePort(t))
	n.password = "s3cret"
	pwfile := filepath.Join(pg.root, "pwfile")
	if err := os.WriteFile(pwfile, []byte(n.password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if pg.cred != nil {
		os.Chown(pwfile, int(pg.cred.Uid), int(pg.cred.Gid))
	}
	// Passwords over TCP, so that a wrong one is refused.
	pg.run("initdb", "-D", n.dir, "--auth-local=trust", "--auth-host=scram-sha-256", "--pwfile="+pwfile, "-U", "postgres", "-E", "UTF8", "--no-locale")
	pg.primary = n // stopped with the test
	dsn := func(password, db string) string {
		return fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/%s?sslmode=disable", password, n.port, db)
	}

	t.Run("DatabaseStartsLater", func(t *testing.T) {
		// The default --store-wait (60s).
		p := startProc(t, partitaBin, nil, false, "--data", t.TempDir(), "--store", dsn(n.password, "postgres"))
		waitForLog(t, p, waitingLine, 1, 30*time.Second)
		time.Sleep(2 * time.Second) // a few more attempts fail
		pg.start(n)
		select {
		case p.URL = <-p.urlc:
		case <-p.done:
			t.Fatalf("partita exited (status %d) instead of serving:\n%s", p.cmd.ProcessState.ExitCode(), p.stderr())
		case <-time.After(30 * time.Second):
			t.Fatalf("partita did not serve within 30s of the database's start:\n%s", p.stderr())
		}
		c := noRetryClient(t, p.endpoint(), "late")
		if _, err := c.CreateTable(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AddEntity(ctx, mustJSONb(map[string]any{"PartitionKey": "p", "RowKey": "r"}), nil); err != nil {
			t.Fatalf("write once the database is up: %v", err)
		}
		if _, err := c.GetEntity(ctx, "p", "r", nil); err != nil {
			t.Fatalf("read of the write: %v", err)
		}
	})

	for _, tc := range []struct{ name, dsn, want string }{
		{"WrongPassword", dsn("wrong", "postgres"), "28P01"},
		{"MissingDatabase", dsn(n.password, "nosuchdb"), "3D000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n.cmd == nil {
				pg.start(n) // DatabaseStartsLater failed before it did
			}
			start := time.Now()
			p := startProc(t, partitaBin, nil, false, "--data", t.TempDir(), "--store", tc.dsn)
			code, ok := p.exited(20 * time.Second) // far below --store-wait's 60s
			if !ok {
				t.Fatalf("partita still running 20s after its start, refused by the database:\n%s", p.stderr())
			}
			if code != 2 || !strings.Contains(p.stderr(), tc.want) {
				t.Errorf("exit status %d, want 2 with SQLSTATE %s in the message:\n%s", code, tc.want, p.stderr())
			}
			if strings.Contains(p.stderr(), waitingLine) {
				t.Errorf("partita waited on a refusal that waiting does not cure (after %v):\n%s", time.Since(start), p.stderr())
			}
		})
	}
}

// TestStoreWait_GivesUp: with no database ever there, partita tries for
// --store-wait, then exits with status 2 and says so.
func TestStoreWait_GivesUp(t *testing.T) {
	if E2EStore == "postgres" {
		t.Skip("runs in the Pebble pass: it needs no database, only --store postgres://")
	}
	const wait = 3 * time.Second
	start := time.Now()
	p := startProc(t, partitaBin, nil, false, "--data", t.TempDir(), "--store", unusedDSN(t), "--store-wait", wait.String())
	code, ok := p.exited(wait + 30*time.Second)
	took := time.Since(start)
	if !ok {
		t.Fatalf("partita still running %v after its start with --store-wait %v:\n%s", took, wait, p.stderr())
	}
	if code != 2 || !strings.Contains(p.stderr(), "not reachable within --store-wait "+wait.String()) {
		t.Errorf("exit status %d, want 2 and the reason:\n%s", code, p.stderr())
	}
	if took < wait {
		t.Errorf("gave up after %v, before --store-wait %v", took, wait)
	}
	if !strings.Contains(p.stderr(), waitingLine) {
		t.Errorf("no attempt was logged:\n%s", p.stderr())
	}
}

// TestStoreWait_Signal: SIGTERM while partita waits for its database ends
// it at once, with status 2 (as a signal while the embedded store opens),
// not after the pause between two attempts. The signal comes after the
// second logged attempt, which is at least 5s after the first: by then the
// pauses have grown to seconds.
func TestStoreWait_Signal(t *testing.T) {
	if E2EStore == "postgres" {
		t.Skip("runs in the Pebble pass: it needs no database, only --store postgres://")
	}
	p := startProc(t, partitaBin, nil, false, "--data", t.TempDir(), "--store", unusedDSN(t))
	waitForLog(t, p, waitingLine, 2, 40*time.Second)
	p.cmd.Process.Signal(syscall.SIGTERM)
	start := time.Now()
	code, ok := p.exited(3 * time.Second)
	if !ok {
		t.Fatalf("partita still running 3s after SIGTERM while waiting for its database:\n%s", p.stderr())
	}
	t.Logf("exited %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	if code != 2 || !strings.Contains(p.stderr(), "interrupted while waiting for the database") {
		t.Errorf("exit status %d, want 2 and the reason:\n%s", code, p.stderr())
	}
}
