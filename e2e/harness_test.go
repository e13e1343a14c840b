// Package e2e drives the real partita binary with the official Azure SDKs.
package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/partita/partita/internal/kv/pgkv/pgtest"
)

const (
	devAccount = "devstoreaccount1"
	devKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

var partitaBin string

// E2EStore selects the engine every test server uses: "" (Pebble, the
// default) or "postgres" (a fresh database on PARTITA_TEST_POSTGRES).
// scripts/test runs the suite once per engine.
var E2EStore = os.Getenv("PARTITA_E2E_STORE")

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "partita-e2e-")
	if err != nil {
		panic(err)
	}
	partitaBin = filepath.Join(dir, "partita")
	if bin := os.Getenv("PARTITA_E2E_BIN"); bin != "" {
		// A binary built elsewhere, e.g. from an older commit, to show
		// that a new test fails on the code before a fix.
		if partitaBin, err = filepath.Abs(bin); err != nil {
			panic(err)
		}
		fmt.Fprintln(os.Stderr, "e2e: PARTITA_E2E_BIN: testing", partitaBin, "instead of building ../cmd/partita")
	} else {
		build := exec.Command("go", "build", "-o", partitaBin, "../cmd/partita")
		build.Stdout, build.Stderr = os.Stdout, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build partita:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Server is a running partita process.
type Server struct {
	URL  string // e.g. http://127.0.0.1:PORT
	Data string
	cmd  *exec.Cmd
	done chan struct{}

	// AdminURL is the admin listener's (--admin-addr), e.g.
	// http://127.0.0.1:PORT; empty when the test disabled it.
	AdminURL string

	logLines atomic.Int64 // lines the server wrote to stderr
}

var (
	servingRE = regexp.MustCompile(`serving (https?://\S+)`)
	adminRE   = regexp.MustCompile(`admin listening on (http://\S+)`)
)

// StartServer starts partita on a random port. Extra flags are appended.
// The process is stopped at the end of the test.
func StartServer(t testing.TB, data string, flags ...string) *Server {
	t.Helper()
	if data == "" {
		data = t.TempDir()
	}
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", data, "--log-level", "warn"}, flags...)
	if !slices.Contains(flags, "--admin-addr") {
		// A port of its own: several servers run at once.
		args = append(args, "--admin-addr", "127.0.0.1:0")
	}
	if E2EStore == "postgres" && !slices.Contains(flags, "--store") {
		// One database per data directory, so a restart on the same
		// directory finds the same data.
		sum := sha256.Sum256([]byte(data))
		dsn := pgtest.CreateDatabase(t, pgtest.AdminDSN(t), "partita_e2e_"+hex.EncodeToString(sum[:6]), true)
		args = append(args, "--store", dsn)
	}
	cmd := exec.Command(partitaBin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Data: data, cmd: cmd, done: make(chan struct{})}
	cmd.Stderr = &testWriter{t: t, lines: &s.logLines}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	urlc := make(chan string, 1)
	go func() {
		for lines.Scan() {
			// The admin line comes first; urlc's send publishes it.
			if m := adminRE.FindStringSubmatch(lines.Text()); m != nil {
				s.AdminURL = m[1]
			}
			if m := servingRE.FindStringSubmatch(lines.Text()); m != nil {
				urlc <- m[1]
			}
		}
		io.Copy(io.Discard, out)
	}()
	go func() { cmd.Wait(); close(s.done) }()
	select {
	case s.URL = <-urlc:
	case <-s.done:
		t.Fatalf("partita exited before serving")
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("partita did not start")
	}
	t.Cleanup(func() { s.Stop(t) })
	return s
}

// Stop sends SIGTERM and waits for a clean exit.
func (s *Server) Stop(t testing.TB) {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		t.Errorf("partita did not stop on SIGTERM")
	}
}

// Endpoint is the path-style service URL of the dev account.
func (s *Server) Endpoint() string { return s.URL + "/" + devAccount }

// testWriter passes a server's log to the test's, counting its lines.
type testWriter struct {
	t     testing.TB
	lines *atomic.Int64
}

func (w *testWriter) Write(p []byte) (int, error) {
	if w.lines != nil {
		w.lines.Add(int64(strings.Count(string(p), "\n")))
	}
	w.t.Logf("partita: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func serviceClient(t testing.TB, s *Server) *aztables.ServiceClient {
	t.Helper()
	cred, err := aztables.NewSharedKeyCredential(devAccount, devKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := aztables.NewServiceClientWithSharedKey(s.Endpoint(), cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newTable creates a fresh table and returns its client.
func newTable(t testing.TB, svc *aztables.ServiceClient) *aztables.Client {
	t.Helper()
	name := fmt.Sprintf("t%d", time.Now().UnixNano())
	if _, err := svc.CreateTable(context.Background(), name, nil); err != nil {
		t.Fatalf("CreateTable(%s): %v", name, err)
	}
	c := svc.NewClient(name)
	tableNamesMu.Lock()
	tableNames[c] = name
	tableNamesMu.Unlock()
	return c
}

var (
	tableNamesMu sync.Mutex
	tableNames   = map[*aztables.Client]string{}
)
