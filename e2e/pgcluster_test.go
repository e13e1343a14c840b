package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgBinDir is the newest installed PostgreSQL's server binaries, or "".
func pgBinDir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		a, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		b, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return a < b
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	return ""
}

// pgNode is one PostgreSQL server of a replicated pair, started by the test
// in a process group of its own so that it can be killed whole, as a
// machine that is lost.
type pgNode struct {
	name string
	dir  string // data directory
	port int
	// password is the postgres user's, for a server that asks for one
	// (empty: trust, as initdb --auth=trust sets up).
	password string
	cmd      *exec.Cmd
	done     chan struct{}
}

// pgPair is a primary and a synchronous standby on loopback ports, built
// from Debian's PostgreSQL binaries in a directory of its own.
type pgPair struct {
	t       *testing.T
	bin     string
	root    string
	cred    *syscall.Credential // run as postgres when the test runs as root
	primary *pgNode
	standby *pgNode
	gen     int       // directories made so far
	retired []*pgNode // former primaries still running
}

// newPGPair starts a primary and a synchronous standby, or skips the test
// as newPGServers does.
func newPGPair(t *testing.T) *pgPair {
	t.Helper()
	p := newPGServers(t)
	p.primary = p.newDir("primary", freePort(t))
	p.run("initdb", "-D", p.primary.dir, "--auth=trust", "-U", "postgres", "-E", "UTF8", "--no-locale")
	p.start(p.primary)
	p.exec(p.primary, `CREATE DATABASE partita`)
	p.standby = p.newDir("standby", freePort(t))
	p.attachStandby()
	return p
}

// newPGServers prepares servers of the test's own (the binaries, a
// directory, the user to run them as, their end with the test) and starts
// none; it skips the test when PostgreSQL is not installed (fails in CI,
// where .ci/run installs it). Tests that bring their own servers run in
// the Pebble pass of the e2e suite only: the PostgreSQL pass would run
// them a second time for nothing.
func newPGServers(t *testing.T) *pgPair {
	t.Helper()
	if E2EStore == "postgres" {
		t.Skip("tests that bring their own PostgreSQL servers run in the Pebble pass")
	}
	bin := pgBinDir()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("PostgreSQL's server binaries are not installed in CI")
		}
		t.Skipf("NOTICE: PostgreSQL's server binaries (/usr/lib/postgresql/*/bin) are not installed; %s is skipped", t.Name())
	}
	root, err := os.MkdirTemp("", "partita-failover-")
	if err != nil {
		t.Fatal(err)
	}
	p := &pgPair{t: t, bin: bin, root: root}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs a postgres user to run PostgreSQL as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		os.Chown(root, uid, gid)
	}
	t.Cleanup(func() {
		for _, n := range append([]*pgNode{p.primary, p.standby}, p.retired...) {
			p.kill(n)
		}
		os.RemoveAll(root)
	})
	return p
}

// DSN names both servers; pgx connects to whichever accepts writes.
func (p *pgPair) DSN() string {
	a, b := p.primary.port, p.standby.port
	if a > b { // the order must not give the primary away
		a, b = b, a
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/partita?sslmode=disable&target_session_attrs=read-write", a, b)
}

func (p *pgPair) newDir(name string, port int) *pgNode {
	p.gen++
	return &pgNode{name: name, dir: filepath.Join(p.root, fmt.Sprintf("%s%d", name, p.gen)), port: port}
}

func (p *pgPair) command(prog string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(p.bin, prog), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Setpgid: true}
	return cmd
}

func (p *pgPair) run(prog string, args ...string) {
	p.t.Helper()
	if out, err := p.command(prog, args...).CombinedOutput(); err != nil {
		p.t.Fatalf("%s: %v\n%s", prog, err, out)
	}
}

// start runs the postmaster of n in the foreground of its own process
// group and waits until it accepts connections.
func (p *pgPair) start(n *pgNode) {
	p.t.Helper()
	// fsync=off: the tests kill processes, not machines, and a killed
	// process's writes are in the kernel's page cache already. The
	// settings that matter here are PostgreSQL's defaults:
	// synchronous_commit=on, and wal_level=replica.
	log, err := os.Create(n.dir + ".log")
	if err != nil {
		p.t.Fatal(err)
	}
	if p.cred != nil {
		os.Chown(log.Name(), int(p.cred.Uid), int(p.cred.Gid))
	}
	n.cmd = p.command("postgres", "-D", n.dir, "-p", strconv.Itoa(n.port), "-k", p.root,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200", "-c", "wal_level=replica", "-c", "max_wal_senders=5",
		"-c", "hot_standby=on", "-c", "wal_receiver_status_interval=1s",
		"-c", "wal_retrieve_retry_interval=200ms")
	n.cmd.Stdout, n.cmd.Stderr = log, log
	if err := n.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	log.Close()
	n.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(n.cmd, n.done)
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := pgx.Connect(context.Background(), n.adminDSN())
		if err == nil {
			c.Close(context.Background())
			return
		}
		select {
		case <-n.done:
			out, _ := os.ReadFile(n.dir + ".log")
			p.t.Fatalf("PostgreSQL %s exited: %s", n.name, out)
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("PostgreSQL %s did not start: %v", n.name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (n *pgNode) adminDSN() string {
	user := "postgres"
	if n.password != "" {
		user += ":" + n.password
	}
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", user, n.port)
}

// exec runs SQL statements on n.
func (p *pgPair) exec(n *pgNode, stmts ...string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, n.adminDSN())
	if err != nil {
		p.t.Fatalf("connect to %s: %v", n.name, err)
	}
	defer c.Close(ctx)
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s); err != nil {
			p.t.Fatalf("%s on %s: %v", s, n.name, err)
		}
	}
}

// kill ends n and every process of its group with SIGKILL: a lost machine.
func (p *pgPair) kill(n *pgNode) {
	if n == nil || n.cmd == nil || n.cmd.Process == nil {
		return
	}
	syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	<-n.done
	// Its children were killed with it; wait until none is left (they
	// are not ours to wait for, so poll the group).
	for i := 0; i < 100 && syscall.Kill(-n.cmd.Process.Pid, 0) == nil; i++ {
		time.Sleep(20 * time.Millisecond)
	}
}

// attachStandby copies the primary into the standby's (new) directory
// with pg_basebackup, starts it streaming, and makes it the primary's
// synchronous standby: from then on a commit returns only once the standby
// has the commit record on disk (synchronous_commit=on; remote_apply would
// also make it visible there, which matters only to reads from standbys,
// and partita reads from the primary).
func (p *pgPair) attachStandby() {
	p.t.Helper()
	s := p.standby
	p.run("pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(p.primary.port), "-U", "postgres",
		"-D", s.dir, "-R", "-X", "stream", "-c", "fast")
	p.start(s)
	p.exec(p.primary, `ALTER SYSTEM SET synchronous_standby_names = '*'`, `SELECT pg_reload_conf()`)
	p.waitSync()
}

// waitSync waits until the primary reports a synchronous standby.
func (p *pgPair) waitSync() {
	p.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := pgx.Connect(ctx, p.primary.adminDSN())
		if err == nil {
			var n int
			err = c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync' AND state = 'streaming'`).Scan(&n)
			c.Close(ctx)
			if err == nil && n > 0 {
				cancel()
				return
			}
		}
		cancel()
		if time.Now().After(deadline) {
			p.t.Fatalf("the standby did not become synchronous: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// promote makes the standby the primary, as a failover manager does after
// the primary is lost: pg_promote, and no synchronous standby named on the
// new primary until a new one is attached (Patroni's non-strict
// synchronous mode), since with its only standby gone every commit would
// wait. (attachStandby names the standby after copying the primary, so a
// promoted standby starts without the setting; the RESET makes sure.) The
// old primary's node is forgotten; its port is reused by the next standby
// so that the front ends' DSN stays valid.
func (p *pgPair) promote() {
	p.t.Helper()
	p.exec(p.standby, `SELECT pg_promote(true, 60)`, `ALTER SYSTEM RESET synchronous_standby_names`, `SELECT pg_reload_conf()`)
	old := p.primary
	p.primary = p.standby
	p.standby = p.newDir("standby", old.port)
	select {
	case <-old.done: // killed: its data is of no further use
		os.RemoveAll(old.dir)
	default: // still running (fenced): killed at the end of the test
		p.retired = append(p.retired, old)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
