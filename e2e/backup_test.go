package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/pebblekv"
	"github.com/partita/partita/internal/kv/pgkv/pgtest"
)

// runPartita runs a partita subcommand and returns its combined output and
// exit status (-1 when it did not run or end).
func runPartita(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(cctx, partitaBin, args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee) && cctx.Err() == nil:
		return string(out), ee.ExitCode()
	}
	t.Fatalf("partita %v: %v\n%s", args, err, out)
	return "", -1
}

// backupStep is one operation of a writer, as its client saw it.
type backupStep struct {
	start, acked time.Time
	after        map[string]props // the partition's state once it applied
}

// TestBackupUnderLoad takes an online backup with partita backup while
// eight clients write single entities and batches (the crash test's
// clients, each owning a partition), restores it by serving the backup
// directory, and judges it against each client's log: every write
// acknowledged before the backup began is there, and each partition is
// exactly the state after one of its client's operations that could have
// been in it (those acknowledged before the backup began, the last of
// them, or those in flight during it), so no batch is torn and nothing is
// half-applied. partita check then passes on the backup.
func TestBackupUnderLoad(t *testing.T) {
	if E2EStore == "postgres" {
		t.Skip("online backup is the embedded engine's; PostgreSQL has its own tools")
	}
	s := StartServer(t, "")
	if s.AdminURL == "" {
		t.Fatal("the server printed no admin listener")
	}
	noRetry := &aztables.ClientOptions{ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}, Transport: &http.Client{Timeout: 30 * time.Second}}}
	cred, _ := aztables.NewSharedKeyCredential(devAccount, devKey)
	svc, err := aztables.NewServiceClientWithSharedKey(s.Endpoint(), cred, noRetry)
	if err != nil {
		t.Fatal(err)
	}
	const table = "backup"
	if _, err := svc.CreateTable(ctx, table, nil); err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	const nclients = 8
	clients := make([]*crashClient, nclients)
	logs := make([][]backupStep, nclients)
	var (
		seq  int64
		mu   sync.Mutex // guards seq
		stop = make(chan struct{})
		wg   sync.WaitGroup
	)
	for i := range clients {
		clients[i] = &crashClient{id: i, c: svc.NewClient(table), rng: rand.New(rand.NewPCG(seed, uint64(i+2))), state: map[string]props{}}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cc := clients[i]
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				seq++
				n := seq
				mu.Unlock()
				start := time.Now()
				if err := cc.step(int(n)); err != nil {
					t.Errorf("client %d: %v", i, err)
					return
				}
				after := make(map[string]props, len(cc.state))
				for k, v := range cc.state { // props are replaced, never changed in place
					after[k] = v
				}
				logs[i] = append(logs[i], backupStep{start: start, acked: time.Now(), after: after})
			}
		}(i)
	}
	// Let the writers get going, then back up three times while they
	// write on.
	type taken struct {
		dir          string
		began, ended time.Time
	}
	var backups []taken
	time.Sleep(time.Second)
	for i := range 3 {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("backup%d", i))
		began := time.Now()
		out, code := runPartita(t, "backup", "--admin", s.AdminURL, "--to", dir)
		ended := time.Now()
		if code != 0 {
			close(stop)
			wg.Wait()
			t.Fatalf("partita backup: exit %d\n%s", code, out)
		}
		if !strings.Contains(out, "backup written to "+dir) {
			t.Errorf("partita backup says %q, want it to name %s", out, dir)
		}
		backups = append(backups, taken{dir, began, ended})
		time.Sleep(300 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	for _, b := range backups {
		r := StartServer(t, b.dir)
		rc := serviceClient(t, r).NewClient(table)
		before, during := 0, 0
		for i, cc := range clients {
			got := partitionState(t, rc, cc.pk())
			// Candidates: the state after the last operation acknowledged
			// before the backup began (or the empty partition), and after
			// each operation that started before the backup ended and was
			// not acknowledged before it began.
			lo := -1
			for k, st := range logs[i] {
				if st.acked.Before(b.began) {
					lo = k
				}
			}
			cands := []map[string]props{{}}
			if lo >= 0 {
				cands = []map[string]props{logs[i][lo].after}
			}
			for k := lo + 1; k < len(logs[i]) && logs[i][k].start.Before(b.ended); k++ {
				cands = append(cands, logs[i][k].after)
			}
			before += lo + 1
			during += len(cands) - 1
			found := false
			for _, c := range cands {
				if sameState(got, c) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s, client %d: the backup holds %v, which is the state after none of the %d operations that could be in it (the first candidate, all acknowledged before the backup: %v)", filepath.Base(b.dir), cc.id, got, len(cands), cands[0])
			}
		}
		t.Logf("%s took %v; %d operations acknowledged before it, %d in flight during it", filepath.Base(b.dir), b.ended.Sub(b.began), before, during)
		if before == 0 {
			t.Errorf("%s: no operation was acknowledged before it", filepath.Base(b.dir))
		}
		r.Stop(t)

		out, code := runPartita(t, "check", "--data", b.dir)
		if code != 0 || !strings.Contains(out, "ok: no inconsistencies") || !strings.Contains(out, "devstoreaccount1/backup") {
			t.Errorf("partita check on %s: exit %d\n%s", b.dir, code, out)
		}
	}
}

func sameState(a, b map[string]props) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !v.equal(w) {
			return false
		}
	}
	return true
}

// TestBackupBadInput: every way to ask for a backup or a check wrongly
// gets a clear message and a non-zero exit, and writes nothing.
func TestBackupBadInput(t *testing.T) {
	if E2EStore == "postgres" {
		t.Skip("the embedded engine's backups and data directories")
	}
	root := t.TempDir()
	s := StartServer(t, "", "--admin-addr", "127.0.0.1:0", "--backup-root", root)
	// Something to back up, so a refused backup that wrote anyway shows.
	if _, err := serviceClient(t, s).CreateTable(ctx, "precious", nil); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(root, "full")
	if err := os.MkdirAll(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, "keep"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	mem := StartServer(t, "", "--store", "mem")
	outside := filepath.Join(t.TempDir(), "outside")

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"non-empty target", []string{"backup", "--admin", s.AdminURL, "--to", full}, "409 Conflict): " + full + " is not empty"},
		{"target is a file", []string{"backup", "--admin", s.AdminURL, "--to", file}, file + " exists and is not a directory"},
		{"outside the backup root", []string{"backup", "--admin", s.AdminURL, "--to", outside}, "403 Forbidden): the directory " + outside + " is not under the backup root"},
		{"escape the root with ..", []string{"backup", "--admin", s.AdminURL, "--to", root + "/../x"}, "is not under the backup root"},
		{"inside the data directory", []string{"backup", "--admin", s.AdminURL, "--to", filepath.Join(s.Data, "b")}, "400 Bad Request): the directory " + filepath.Join(s.Data, "b") + " is inside the store's own directory"},
		{"no --to", []string{"backup", "--admin", s.AdminURL}, "--to DIR is required"},
		{"unreachable admin URL", []string{"backup", "--admin", dead, "--to", filepath.Join(root, "b1")}, "cannot reach the admin listener at " + dead},
		{"not a URL", []string{"backup", "--admin", "127.0.0.1:1", "--to", filepath.Join(root, "b2")}, "want the admin listener's URL"},
		{"engine without backups", []string{"backup", "--admin", mem.AdminURL, "--to", filepath.Join(root, "b3")}, "501 Not Implemented): the mem engine has no online backup"},
		{"check a missing directory", []string{"check", "--data", filepath.Join(root, "missing")}, "data directory " + filepath.Join(root, "missing") + " does not exist"},
		{"check a directory without a store", []string{"check", "--data", root}, root + " holds no partita store"},
		{"check a store in use", []string{"check", "--data", s.Data}, "data directory " + s.Data + " is in use by another partita process"},
		// Served, every backup would be refused with 403.
		{"serve with a missing backup root", []string{"serve", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--data", filepath.Join(t.TempDir(), "d1"), "--backup-root", filepath.Join(root, "missing")}, "--backup-root " + filepath.Join(root, "missing") + ": stat"},
		{"serve with a file as backup root", []string{"serve", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--data", filepath.Join(t.TempDir(), "d2"), "--backup-root", file}, "--backup-root " + file + ": not a directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, code := runPartita(t, c.args...)
			if code == 0 || !strings.Contains(out, c.want) {
				t.Errorf("partita %s: exit %d, output:\n%s\nwant a non-zero exit and %q", strings.Join(c.args, " "), code, out, c.want)
			}
		})
	}
	// Nothing was written by the refused backups.
	for _, p := range []string{outside, filepath.Join(root, "x"), filepath.Join(filepath.Dir(root), "x"), filepath.Join(root, "b1"), filepath.Join(root, "b2"), filepath.Join(root, "b3"), filepath.Join(s.Data, "b")} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after a refused backup", p)
		}
	}
	if entries, _ := os.ReadDir(full); len(entries) != 1 {
		t.Errorf("the non-empty target now holds %d entries, want its 1", len(entries))
	}

	// The wire: a relative path and a malformed body are 400, a second
	// method is 405; health and readiness answer.
	// A web page's browser can send the backup too (a cross-site POST of
	// text/plain needs no preflight) and read loopback under a rebound
	// name: both are refused before the handler, and nothing is written.
	fromPage := filepath.Join(root, "from-a-page")
	for _, c := range []struct {
		method, path, body string
		header             map[string]string
		status             int
		want               string
	}{
		{"POST", "/backup", `{"dir":"relative/dir"}`, nil, 400, `is relative: give an absolute path`},
		{"POST", "/backup", `{"dir":`, nil, 400, `the body must be JSON`},
		{"POST", "/backup", `{"to":"/x"}`, nil, 400, `the body must be JSON`},
		{"GET", "/backup", ``, nil, 405, ``},
		{"GET", "/healthz", ``, nil, 200, `ok`},
		{"GET", "/readyz", ``, nil, 200, `ready`},
		{"POST", "/backup", `{"dir":"` + fromPage + `"}`, map[string]string{"Origin": "https://evil.example", "Content-Type": "text/plain"}, 403, `a request from a web page`},
		{"POST", "/backup", `{"dir":"` + fromPage + `"}`, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, `a request from a web page`},
		{"GET", "/healthz", ``, map[string]string{"Host": "evil.example"}, 403, `is not an IP address or localhost`},
		{"GET", "/metrics", ``, map[string]string{"Host": "rebound.evil.example:10012"}, 403, `is not an IP address or localhost`},
		{"GET", "/healthz", ``, map[string]string{"Host": "localhost"}, 200, `ok`},
	} {
		req, _ := http.NewRequest(c.method, s.AdminURL+c.path, strings.NewReader(c.body))
		for k, v := range c.header {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(raw), c.want) {
			t.Errorf("%s %s %s %v: %d %.200q, want %d containing %q", c.method, c.path, c.body, c.header, resp.StatusCode, raw, c.status, c.want)
		}
	}
	if _, err := os.Stat(fromPage); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after backups sent by a web page", fromPage)
	}

	// A backup into an empty directory under the root succeeds, and the
	// table is in it.
	empty := filepath.Join(root, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, code := runPartita(t, "backup", "--admin", s.AdminURL, "--to", empty); code != 0 {
		t.Fatalf("backup into an empty directory: exit %d\n%s", code, out)
	}
	if out, code := runPartita(t, "check", "--data", empty); code != 0 || !strings.Contains(out, "devstoreaccount1/precious id 1: 0 entities") {
		t.Errorf("check of the backup: exit %d\n%s", code, out)
	}
}

// TestBackupPostgres: on the PostgreSQL engine the admin listener is ready
// when the database answers, and a backup is refused with 501 and a
// pointer to PostgreSQL's own tools, writing nothing.
func TestBackupPostgres(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	s := StartServer(t, "", "--store", dsn)
	if code, body := adminGet(t, s.AdminURL+"/readyz"); code != http.StatusOK {
		t.Errorf("readyz on PostgreSQL: %d %s", code, body)
	}
	dir := filepath.Join(t.TempDir(), "b")
	out, code := runPartita(t, "backup", "--admin", s.AdminURL, "--to", dir)
	if code == 0 || !strings.Contains(out, "501 Not Implemented): the PostgreSQL engine has no online backup of partita's") || !strings.Contains(out, "pg_basebackup") {
		t.Errorf("backup on PostgreSQL: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after a refused backup", dir)
	}
}

func adminGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestCheckCorrupt: partita check passes on a stopped server's store,
// and after two corruptions written through the engine directly (an entity
// of a table id that is not in the catalog, a garbage entity value) exits 1
// naming both.
func TestCheckCorrupt(t *testing.T) {
	if E2EStore == "postgres" {
		t.Skip("partita check reads the embedded engine's store")
	}
	s := StartServer(t, "")
	svc := serviceClient(t, s)
	if _, err := svc.CreateTable(ctx, "intact", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.NewClient("intact").AddEntity(ctx, mustJSONb(map[string]any{"PartitionKey": "p", "RowKey": "r", "N": 1}), nil); err != nil {
		t.Fatal(err)
	}
	s.Stop(t)
	out, code := runPartita(t, "check", "--data", s.Data)
	if code != 0 || !strings.Contains(out, "devstoreaccount1/intact id 1: 1 entities") || !strings.Contains(out, "ok: no inconsistencies") {
		t.Fatalf("check of the intact store: exit %d\n%s", code, out)
	}

	db, err := pebblekv.Open(s.Data, nil)
	if err != nil {
		t.Fatal(err)
	}
	entityKey := func(id byte, pk, rk string) []byte {
		k := []byte{0x03, 0, 0, 0, 0, 0, 0, 0, id}
		k = append(append(k, pk...), 0x00, 0x01)
		return append(append(k, rk...), 0x00, 0x01)
	}
	err = db.Update(ctx, func(tx kv.Txn) error {
		if err := tx.Set(entityKey(99, "p", "orphan"), []byte{1, 0, 0}); err != nil {
			return err
		}
		return tx.Set(entityKey(1, "p", "garbage"), []byte("not an entity"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, code = runPartita(t, "check", "--data", s.Data)
	for _, want := range []string{"2 inconsistencies", "table id 99 is not in the catalog", "malformed entity value", "the store is inconsistent"} {
		if !strings.Contains(out, want) {
			t.Errorf("check of the corrupted store says:\n%s\nwant %q", out, want)
		}
	}
	if code != 1 {
		t.Errorf("check of the corrupted store: exit %d, want 1", code)
	}
}

// TestCheckDamagedFiles: partita check on a store with a damaged file
// (an sstable block that fails its checksum, a blob file gone) exits 2
// with one clear message that says to restore from a backup: no Go panic,
// and not serve's fatal line, which promises that a restart recovers
// everything. Before, the corrupt block ended check with status 1 and
// "fatal storage error: partita stops; a restart recovers every
// acknowledged write from the write-ahead log", and the missing blob
// file with a Go stack trace ("panic: unknown metadata type: <nil>").
func TestCheckDamagedFiles(t *testing.T) {
	if E2EStore == "postgres" {
		t.Skip("partita check reads the embedded engine's store")
	}
	write := func(t *testing.T, dir string) (biggestSST string, blobs []string) {
		db, err := pebblekv.Open(dir, &pebblekv.Options{MemTableSize: 1 << 20, MinFreeBytes: -1, NoSync: true, SeparateValues: true}) // as stores written before 2026-11-27
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20000 {
			v := make([]byte, 100) // kept in the sstables' blocks
			if i%4 == 0 {
				v = make([]byte, 1000) // kept in blob files
			}
			for j := range v {
				v[j] = 'a' + byte(rand.IntN(26)) // not compressible
			}
			if err := db.Update(ctx, func(tx kv.Txn) error { return tx.Set(fmt.Appendf(nil, "k%06d", i), v) }); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		ents, _ := os.ReadDir(dir)
		var size int64
		for _, e := range ents {
			fi, _ := e.Info()
			switch {
			case strings.HasSuffix(e.Name(), ".sst") && fi.Size() > size:
				biggestSST, size = e.Name(), fi.Size()
			case strings.HasSuffix(e.Name(), ".blob"):
				blobs = append(blobs, e.Name())
			}
		}
		if size < 64<<10 || len(blobs) == 0 {
			t.Fatalf("want an sstable of 64 KiB or more and blob files: %v", ents)
		}
		return biggestSST, blobs
	}
	judge := func(t *testing.T, dir, file string) {
		out, code := runPartita(t, "check", "--data", dir)
		if code != 2 {
			t.Errorf("exit %d, want 2", code)
		}
		for _, want := range []string{file, "restore the data directory from a backup"} {
			if !strings.Contains(out, want) {
				t.Errorf("check does not say %q", want)
			}
		}
		for _, bad := range []string{"panic", "goroutine", "a restart recovers"} {
			if strings.Contains(out, bad) {
				t.Errorf("check says %q", bad)
			}
		}
		if t.Failed() {
			t.Logf("partita check:\n%s", out)
		}
	}
	t.Run("corrupt block", func(t *testing.T) {
		dir := t.TempDir()
		sst, _ := write(t, dir)
		f, err := os.OpenFile(filepath.Join(dir, sst), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := f.Stat()
		f.WriteAt([]byte(strings.Repeat("\xff", 64)), fi.Size()/2)
		f.Close()
		judge(t, dir, sst)
	})
	t.Run("missing blob file", func(t *testing.T) {
		dir := t.TempDir()
		_, blobs := write(t, dir)
		if err := os.Remove(filepath.Join(dir, blobs[0])); err != nil {
			t.Fatal(err)
		}
		judge(t, dir, blobs[0])
	})
}
