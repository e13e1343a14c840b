package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// TestHostile_ConnectionFlood: a client that opens more connections than
// the server may have open files, each sending half a request's headers,
// takes at most --max-connections of them (fitted under the open-file
// limit beside the store's files). The store keeps the files it needs: a
// keep-alive client writes 40 MB of batches meanwhile, so the store rolls
// its log and flushes sstables, and nothing runs out of files. Before the
// cap, the connections took every file: accept failed with "too many
// open files", and so did Pebble's next sstable.
func TestHostile_ConnectionFlood(t *testing.T) {
	var own syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &own); err != nil {
		t.Fatal(err)
	}
	nofile := uint64(2600)
	if own.Cur < 2*nofile {
		nofile = own.Cur / 2
	}
	flood := int(nofile) + 200
	wrapper := filepath.Join(t.TempDir(), "partita-nofile")
	script := fmt.Sprintf("#!/bin/sh\nulimit -n %d || exit 97\nexec %q \"$@\"\n", nofile, partitaBin)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	p := startProc(t, wrapper, nil, true, "--data", data, "--read-header-timeout", "2m")
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(p.stderr(), "--max-connections lowered") && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond) // stderr is copied by a goroutine of its own
	}
	if !strings.Contains(p.stderr(), "--max-connections lowered") {
		t.Errorf("no warning that --max-connections was fitted under an open-file limit of %d:\n%s", nofile, p.stderr())
	}
	// The cap the server chose, from its warning (not a second copy of
	// its rule).
	m := regexp.MustCompile(`max_connections=(\d+)`).FindStringSubmatch(p.stderr())
	if m == nil {
		t.Fatalf("the warning does not say the cap:\n%s", p.stderr())
	}
	conns, _ := strconv.Atoi(m[1])
	if conns <= 0 || conns >= int(nofile) {
		t.Fatalf("--max-connections fitted to %d under an open-file limit of %d", conns, nofile)
	}

	c := noRetryClient(t, p.endpoint(), "flood")
	if _, err := c.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}

	// The flood: half a request's headers on each connection, held open.
	var mu sync.Mutex
	var held []net.Conn
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	host := strings.TrimPrefix(p.URL, "http://")
	var wg sync.WaitGroup
	sem := make(chan struct{}, 100)
	var dialErrs int
	for range flood {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			nc, err := net.DialTimeout("tcp", host, 5*time.Second)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				dialErrs++
				return
			}
			held = append(held, nc)
			nc.Write([]byte("GET /" + devAccount + "/Tables HTTP/1.1\r\nHost: x\r\n"))
		}()
	}
	wg.Wait()
	t.Logf("%d connections open to a server limited to %d open files (%d dials failed)", len(held), nofile, dialErrs)
	time.Sleep(time.Second) // let the server accept what it will

	pid := p.cmd.Process.Pid
	fds := func() int {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	if n := fds(); n > conns+200 {
		t.Errorf("the server has %d files open under the flood; want at most its %d connections and the store's few", n, conns)
	}

	// Meanwhile, on the connection the client already holds: 40 MB of
	// batches, enough for the store to roll its log and flush.
	payload := strings.Repeat("x", 20000)
	for b := range 20 {
		actions := make([]aztables.TransactionAction, 100)
		for i := range actions {
			actions[i] = aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd,
				Entity: mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": fmt.Sprintf("%02d-%03d", b, i), "V": payload})}
		}
		if _, err := c.SubmitTransaction(ctx, actions, nil); err != nil {
			t.Fatalf("batch %d during the flood: %v", b, err)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if ssts, _ := filepath.Glob(filepath.Join(data, "*.sst")); len(ssts) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store flushed no sstable during the flood:\n%s", p.stderr())
		}
	}
	if n := fds(); n > conns+200 {
		t.Errorf("the server has %d files open after the writes; want at most its %d connections and the store's few", n, conns)
	}
	if strings.Contains(p.stderr(), "too many open files") {
		t.Errorf("the server ran out of files under the flood:\n%s", p.stderr())
	}

	// The flood ends; a new client is served.
	mu.Lock()
	for _, nc := range held {
		nc.Close()
	}
	held = nil
	mu.Unlock()
	c2 := noRetryClient(t, p.endpoint(), "flood")
	got, err := c2.GetEntity(ctx, "p", "19-099", nil)
	if err != nil {
		t.Fatalf("after the flood: %v", err)
	}
	if !strings.Contains(string(got.Value), payload[:100]) {
		t.Errorf("after the flood: the last entity written is not what was written")
	}
}

// TestHostile_AdminConnectionCap: the admin listener (health, readiness,
// backups, metrics) keeps at most 64 connections open, so a flood of
// them cannot take the files the store needs. With 64 held open by a
// client that sends nothing, a health check waits for a free one and is
// served as soon as one closes.
func TestHostile_AdminConnectionCap(t *testing.T) {
	s := StartServer(t, "")
	if s.AdminURL == "" {
		t.Fatal("no admin listener")
	}
	addr := strings.TrimPrefix(s.AdminURL, "http://")
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range 64 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	health := func(wait time.Duration) (string, error) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return "", err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(wait))
		if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\n\r\n")); err != nil {
			return "", err
		}
		b := make([]byte, 64)
		n, err := c.Read(b)
		return string(b[:n]), err
	}
	// The 65th waits in the kernel's accept queue, unserved.
	if got, err := health(time.Second); err == nil {
		t.Fatalf("a 65th admin connection was served while 64 were held: %q", got)
	}
	held[0].Close()
	held = held[1:]
	got, err := health(5 * time.Second)
	if err != nil || !strings.HasPrefix(got, "HTTP/1.1 200") {
		t.Fatalf("health check after one connection closed: %q, %v", got, err)
	}
}
