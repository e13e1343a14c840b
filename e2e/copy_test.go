package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// connString is the connection string of a dev-account endpoint.
func connString(endpoint, key string) string {
	return "DefaultEndpointsProtocol=http;AccountName=" + devAccount + ";AccountKey=" + key + ";TableEndpoint=" + endpoint + ";"
}

// runCopy runs partita copy and returns stdout, stderr and the exit error.
func runCopy(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(partitaBin, append([]string{"copy", "--progress", "plain", "--progress-interval", "1s"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	t.Logf("partita copy %s\nstdout:\n%sstderr:\n%s", redactArgs(args), out.String(), errb.String())
	return out.String(), errb.String(), err
}

func redactArgs(args []string) string {
	s := strings.Join(args, " ")
	return strings.ReplaceAll(s, devKey, "KEY")
}

// mustCopy runs partita copy and fails the test unless it succeeds.
func mustCopy(t *testing.T, args ...string) string {
	t.Helper()
	out, _, err := runCopy(t, args...)
	if err != nil {
		t.Fatalf("partita copy %s: %v", redactArgs(args), err)
	}
	return out
}

// Azurite is a running azurite-table process (test/azurite, from npm).
type Azurite struct{ Endpoint string }

func startAzurite(t *testing.T) *Azurite {
	t.Helper()
	bin, _ := filepath.Abs("../test/azurite/node_modules/.bin/azurite-table")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("Azurite is not installed (%v): run scripts/test, or npm ci --prefix test/azurite", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--tableHost", "127.0.0.1", "--tablePort", strconv.Itoa(port), "--inMemoryPersistence",
		"--skipApiVersionCheck", "--disableProductStyleUrl", "--silent")
	cmd.Stdout, cmd.Stderr = &testWriter{t: t}, &testWriter{t: t}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	az := &Azurite{Endpoint: fmt.Sprintf("http://127.0.0.1:%d/%s", port, devAccount)}
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			return az
		}
		select {
		case <-done:
			t.Fatal("azurite-table exited before listening")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("azurite-table did not start")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func sdkService(t *testing.T, endpoint string) *aztables.ServiceClient {
	t.Helper()
	cred, err := aztables.NewSharedKeyCredential(devAccount, devKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := aztables.NewServiceClientWithSharedKey(endpoint, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// prop is one property of a seeded entity: its type (annotated in the
// seed unless String, Int32 or Boolean) and its JSON value as partita
// writes it in responses.
type prop struct {
	name, typ, raw string
}

// edgeProps holds every EDM type at its edges. Azurite (JavaScript) turns
// -0.0 into 0, so negative zero is not among them.
var edgeProps = []prop{
	{"S", "Edm.String", `"line\nbreak \"q\" \\ \u2028 😀 ü"`},
	{"Empty", "Edm.String", `""`},
	{"I32min", "Edm.Int32", `-2147483648`},
	{"I32max", "Edm.Int32", `2147483647`},
	{"I64min", "Edm.Int64", `"-9223372036854775808"`},
	{"I64max", "Edm.Int64", `"9223372036854775807"`},
	{"D", "Edm.Double", `0.1`},
	{"DInt", "Edm.Double", `5.0`},
	{"DMax", "Edm.Double", `1.7976931348623157E+308`},
	{"DTiny", "Edm.Double", `5E-324`},
	{"DNaN", "Edm.Double", `"NaN"`},
	{"DInf", "Edm.Double", `"Infinity"`},
	{"DNInf", "Edm.Double", `"-Infinity"`},
	{"T", "Edm.Boolean", `true`},
	{"F", "Edm.Boolean", `false`},
	{"DTmin", "Edm.DateTime", `"1601-01-01T00:00:00Z"`},
	{"DTmax", "Edm.DateTime", `"9999-12-31T23:59:59.9999999Z"`},
	{"DT7", "Edm.DateTime", `"2024-02-29T12:34:56.1234567Z"`},
	{"G", "Edm.Guid", `"01234567-89ab-cdef-0123-456789abcdef"`},
	{"Bin", "Edm.Binary", `"AAEC/w=="`},
	{"BinEmpty", "Edm.Binary", `""`},
}

type seedEntity struct {
	pk, rk string
	props  []prop
}

// seedJSON is the request body: every type but String, Int32 and Boolean
// annotated (doubles too: Azurite reads an unannotated 5.0 back as 5).
func (e seedEntity) seedJSON() []byte {
	return e.json(func(p prop) bool {
		return p.typ != "Edm.String" && p.typ != "Edm.Int32" && p.typ != "Edm.Boolean"
	})
}

// wantJSON is what partita answers in fullmetadata (without the odata.*
// and Timestamp members): finite doubles are not annotated.
func (e seedEntity) wantJSON() []byte {
	return e.json(func(p prop) bool {
		switch p.typ {
		case "Edm.String", "Edm.Int32", "Edm.Boolean":
			return false
		case "Edm.Double":
			return strings.HasPrefix(p.raw, `"`)
		}
		return true
	})
}

func (e seedEntity) json(annotate func(prop) bool) []byte {
	pk, _ := json.Marshal(e.pk)
	rk, _ := json.Marshal(e.rk)
	b := []byte(`{"PartitionKey":` + string(pk) + `,"RowKey":` + string(rk))
	for _, p := range e.props {
		if annotate(p) {
			b = append(b, `,"`+p.name+`@odata.type":"`+p.typ+`"`...)
		}
		b = append(b, `,"`+p.name+`":`+p.raw...)
	}
	return append(b, '}')
}

func roundTripEntities() []seedEntity {
	big := make([]prop, 16)
	for i := range big {
		payload := bytes.Repeat([]byte{byte(i)}, 64000)
		big[i] = prop{fmt.Sprintf("Blob%02d", i), "Edm.Binary", `"` + base64.StdEncoding.EncodeToString(payload) + `"`}
	}
	es := []seedEntity{
		{"O'Brien \"quoted\" ü 日本 😀", "r'1 \"x\"", edgeProps},
		{"", "", []prop{{"OnlyInt", "Edm.Int32", `1`}}},
		{"", "b", []prop{{"Other", "Edm.String", `"s"`}, {"L", "Edm.Int64", `"5"`}}},
		{"h", "1", []prop{{"A", "Edm.String", `"a"`}}},
		{"h", "2", []prop{{"A", "Edm.Int64", `"2"`}, {"B", "Edm.Guid", `"ffffffff-0000-0000-0000-000000000000"`}}},
		{"h", "3", nil},
		{"big", "1MiB", big},
	}
	return es
}

// seedBulk inserts n entities over parts partitions into table with $batch.
func seedBulk(t *testing.T, svc *aztables.ServiceClient, table string, parts, n, size int) {
	t.Helper()
	ctx := context.Background()
	if _, err := svc.CreateTable(ctx, table, nil); err != nil {
		t.Fatalf("CreateTable %s: %v", table, err)
	}
	c := svc.NewClient(table)
	per := n / parts
	pad := strings.Repeat("x", size)
	for p := 0; p < parts; p++ {
		pk := fmt.Sprintf("part-%03d-é", p)
		for start := 0; start < per; start += 100 {
			var acts []aztables.TransactionAction
			for i := start; i < per && i < start+100; i++ {
				body := fmt.Sprintf(`{"PartitionKey":%q,"RowKey":"row-%06d","N":%d,"Big@odata.type":"Edm.Int64","Big":"%d","Pad":%q}`, pk, i, i, int64(i)<<40, pad)
				acts = append(acts, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: []byte(body)})
			}
			if _, err := c.SubmitTransaction(ctx, acts, nil); err != nil {
				t.Fatalf("seed %s: %v", table, err)
			}
		}
	}
}

// readTable reads every entity of table in fullmetadata over plain HTTP
// (SharedKeyLite signed here, not by the code under test), keyed by
// PartitionKey and RowKey, without the odata.* and Timestamp members: the
// independent view of a table's content. The Go SDK would not do: it
// re-encodes what it reads, so 5.0 (Double) comes back as 5.
func readTable(t *testing.T, endpoint, table string) map[[2]string]map[string]any {
	t.Helper()
	out := map[[2]string]map[string]any{}
	u, _ := url.Parse(endpoint)
	key, _ := base64.StdEncoding.DecodeString(devKey)
	npk, nrk := "", ""
	for {
		q := url.Values{}
		if npk != "" {
			q.Set("NextPartitionKey", npk)
			q.Set("NextRowKey", nrk)
		}
		path := u.Path + "/" + table + "()"
		req, _ := http.NewRequest(http.MethodGet, u.Scheme+"://"+u.Host+path+"?"+q.Encode(), nil)
		date := time.Now().UTC().Format(http.TimeFormat)
		m := hmac.New(sha256.New, key)
		m.Write([]byte(date + "\n/" + devAccount + path))
		req.Header.Set("x-ms-date", date)
		req.Header.Set("x-ms-version", "2019-02-02")
		req.Header.Set("Accept", "application/json;odata=fullmetadata")
		req.Header.Set("Authorization", "SharedKeyLite "+devAccount+":"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("list %s: %v", table, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("list %s: %d %s", table, resp.StatusCode, body)
		}
		var page struct{ Value []json.RawMessage }
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatalf("list %s: %v", table, err)
		}
		for _, raw := range page.Value {
			e := decodeJSON(t, raw)
			k := [2]string{e["PartitionKey"].(string), e["RowKey"].(string)}
			if _, dup := out[k]; dup {
				t.Fatalf("table %s lists %q twice", table, k)
			}
			out[k] = e
		}
		npk, nrk = resp.Header.Get("x-ms-continuation-NextPartitionKey"), resp.Header.Get("x-ms-continuation-NextRowKey")
		if npk == "" {
			return out
		}
	}
}

func decodeJSON(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	for k := range m {
		if strings.HasPrefix(k, "odata.") || strings.HasPrefix(k, "Timestamp") {
			delete(m, k)
		}
	}
	return m
}

func sameTables(t *testing.T, what string, a, b map[[2]string]map[string]any) {
	t.Helper()
	if len(a) != len(b) {
		t.Errorf("%s: %d entities against %d", what, len(a), len(b))
	}
	bad := 0
	for k, ea := range a {
		eb, ok := b[k]
		if !ok {
			t.Errorf("%s: %q missing", what, k)
		} else if fmt.Sprint(ea) != fmt.Sprint(eb) {
			t.Errorf("%s: %q differs:\n%v\n%v", what, k, ea, eb)
		} else {
			continue
		}
		if bad++; bad > 5 {
			t.Fatalf("%s: more differences not shown", what)
		}
	}
}

// TestCopyRoundTrip: Azurite → partita → JSONL → a second partita, with
// every EDM edge value, unicode, quote-bearing and empty keys, a 1 MiB
// entity and heterogeneous entities, ends identical: by --verify and by
// reading both partitas and the seed independently with the Go SDK.
func TestCopyRoundTrip(t *testing.T) {
	az := startAzurite(t)
	a, b := StartServer(t, ""), StartServer(t, "")
	ctx := context.Background()
	azSvc := sdkService(t, az.Endpoint)
	if _, err := azSvc.CreateTable(ctx, "edge", nil); err != nil {
		t.Fatal(err)
	}
	seeds := roundTripEntities()
	for _, e := range seeds {
		if _, err := azSvc.NewClient("edge").AddEntity(ctx, e.seedJSON(), nil); err != nil {
			t.Fatalf("seed %q/%q into Azurite: %v", e.pk, e.rk, err)
		}
	}
	seedBulk(t, azSvc, "bulk", 20, 2000, 100)

	azConn, aConn, bConn := connString(az.Endpoint, devKey), connString(a.Endpoint(), devKey), connString(b.Endpoint(), devKey)
	dir := t.TempDir()
	file := filepath.Join(dir, "export.jsonl.gz")
	mustCopy(t, "--from", azConn, "--to", aConn, "--parallel", "4")
	mustCopy(t, "--from", aConn, "--to", file)
	mustCopy(t, "--from", file, "--to", bConn)

	// --verify, every pair.
	for _, pair := range [][2]string{{azConn, bConn}, {aConn, bConn}, {file, bConn}, {azConn, file}} {
		out := mustCopy(t, "--from", pair[0], "--to", pair[1], "--verify")
		for _, table := range []string{"edge", "bulk"} {
			if !strings.Contains(out, "table "+table+": identical") {
				t.Errorf("verify does not call %s identical:\n%s", table, out)
			}
		}
	}

	// Independently: the Go SDK reads the same content from both partitas,
	// and the edge table holds exactly what was seeded.
	bSvc := sdkService(t, b.Endpoint())
	for _, table := range []string{"edge", "bulk"} {
		sameTables(t, "partita A vs B, "+table, readTable(t, a.Endpoint(), table), readTable(t, b.Endpoint(), table))
	}
	want := map[[2]string]map[string]any{}
	for _, e := range seeds {
		want[[2]string{e.pk, e.rk}] = decodeJSON(t, e.wantJSON())
	}
	sameTables(t, "seed vs B, edge", want, readTable(t, b.Endpoint(), "edge"))
	bulk := readTable(t, b.Endpoint(), "bulk")
	if len(bulk) != 2000 {
		t.Errorf("bulk: %d entities at B, want 2000", len(bulk))
	}

	// --verify notices a changed value, a changed type and a missing entity.
	bEdge := bSvc.NewClient("edge")
	if _, err := bEdge.UpsertEntity(ctx, []byte(`{"PartitionKey":"h","RowKey":"1","A":"changed"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := bEdge.UpsertEntity(ctx, []byte(`{"PartitionKey":"h","RowKey":"2","A":2,"B@odata.type":"Edm.Guid","B":"ffffffff-0000-0000-0000-000000000000"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := bEdge.DeleteEntity(ctx, "h", "3", nil); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCopy(t, "--from", aConn, "--to", bConn, "--verify", "--tables", "ed*")
	if err == nil {
		t.Fatal("--verify exits 0 although the destination differs")
	}
	for _, want := range []string{
		`PartitionKey="h" RowKey="1": property "A": source Edm.String "a", destination Edm.String "changed"`,
		`PartitionKey="h" RowKey="2": property "A": source Edm.Int64 "2", destination Edm.Int32 "2"`,
		`PartitionKey="h" RowKey="3": only at the source`,
		"table edge: 3 differences",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("verify output lacks %s", want)
		}
	}
	if strings.Contains(out, "table bulk") {
		t.Errorf("--tables ed* also verified bulk")
	}
}

// faultProxy is a reverse proxy in front of a partita that can delay
// $batch requests and answer some of them 503 ServerBusy or 500.
type faultProxy struct {
	URL      string
	delay    atomic.Int64 // ns per $batch
	every    int          // fail every Nth $batch (0: never)
	batches  atomic.Int64
	injected atomic.Int64
	// stallAfter, when above 0, holds every $batch after that many
	// until its client goes away.
	stallAfter atomic.Int64
	mu         sync.Mutex
	// failedAt and retriedAt time the first injected 503 (Retry-After: 1)
	// and the request after it.
	failedAt, retriedAt time.Time
}

func startFaultProxy(t *testing.T, target string, every int) *faultProxy {
	t.Helper()
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(u)
	fp := &faultProxy{every: every}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/$batch") {
			n := fp.batches.Add(1)
			fp.mu.Lock()
			if fp.injected.Load() == 1 && fp.retriedAt.IsZero() {
				fp.retriedAt = time.Now()
			}
			fp.mu.Unlock()
			if d := fp.delay.Load(); d > 0 {
				time.Sleep(time.Duration(d))
			}
			if s := fp.stallAfter.Load(); s > 0 && n > s {
				<-r.Context().Done()
				return
			}
			if fp.every > 0 && n%int64(fp.every) == 0 {
				k := fp.injected.Add(1)
				w.Header().Set("Content-Type", "application/json;odata=minimalmetadata")
				if k%2 == 1 {
					w.Header().Set("x-ms-error-code", "ServerBusy")
					if k == 1 {
						w.Header().Set("Retry-After", "1")
						fp.mu.Lock()
						fp.failedAt = time.Now()
						fp.mu.Unlock()
					}
					w.WriteHeader(http.StatusServiceUnavailable)
					fmt.Fprint(w, `{"odata.error":{"code":"ServerBusy","message":{"lang":"en-US","value":"The server is busy."}}}`)
				} else {
					w.Header().Set("x-ms-error-code", "InternalError")
					w.WriteHeader(http.StatusInternalServerError)
					fmt.Fprint(w, `{"odata.error":{"code":"InternalError","message":{"lang":"en-US","value":"The server encountered an internal error."}}}`)
				}
				return
			}
		}
		rp.ServeHTTP(w, r)
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	fp.URL = "http://" + l.Addr().String()
	return fp
}

// TestCopyServerBusy: a destination that answers every third $batch with
// 503 ServerBusy or 500 still ends identical; the first 503 carries
// Retry-After: 1, and the retry waits for it.
func TestCopyServerBusy(t *testing.T) {
	a, b := StartServer(t, ""), StartServer(t, "")
	seedBulk(t, sdkService(t, a.Endpoint()), "busy", 10, 3000, 200)
	fp := startFaultProxy(t, b.URL, 3)
	aConn, pConn := connString(a.Endpoint(), devKey), connString(fp.URL+"/"+devAccount, devKey)
	out, stderr, err := runCopy(t, "--from", aConn, "--to", pConn, "--parallel", "1")
	if err != nil {
		t.Fatalf("copy through the faulty proxy: %v", err)
	}
	// The Retry-After alone makes the copy outlast one 1 s progress interval.
	if !regexp.MustCompile(`(?m)^\d+ entities, \d+ entities/s, [0-9.]+ [KMG]?i?B, \d+s elapsed(, \d+ retries)?$`).MatchString(stderr) {
		t.Errorf("no plain progress line on stderr:\n%s", stderr)
	}
	if fp.injected.Load() < 5 {
		t.Fatalf("only %d faults injected", fp.injected.Load())
	}
	if !regexp.MustCompile(`[1-9][0-9]* retries`).MatchString(out) {
		t.Errorf("summary reports no retries:\n%s", out)
	}
	fp.mu.Lock()
	gap := fp.retriedAt.Sub(fp.failedAt)
	fp.mu.Unlock()
	if gap < 900*time.Millisecond {
		t.Errorf("the request after a 503 with Retry-After: 1 came %v later", gap)
	}
	sameTables(t, "busy", readTable(t, a.Endpoint(), "busy"), readTable(t, b.Endpoint(), "busy"))
	mustCopy(t, "--from", aConn, "--to", connString(b.Endpoint(), devKey), "--verify")
}

// TestCopyKillResume: a copy with --checkpoint killed with SIGKILL
// mid-way and started again with the same flags resumes (copies less than
// the whole table the second time) and ends with exactly the source's
// content, nothing duplicated.
func TestCopyKillResume(t *testing.T) {
	a, b := StartServer(t, ""), StartServer(t, "")
	const total = 6000
	seedBulk(t, sdkService(t, a.Endpoint()), "resume", 12, total, 300)
	fp := startFaultProxy(t, b.URL, 0)
	fp.delay.Store(int64(150 * time.Millisecond))
	cpFile := filepath.Join(t.TempDir(), "copy.checkpoint")
	args := []string{"copy", "--progress", "none", "--from", connString(a.Endpoint(), devKey), "--to", connString(fp.URL+"/"+devAccount, devKey), "--parallel", "3", "--checkpoint", cpFile}

	cmd := exec.Command(partitaBin, args...)
	cmd.Stdout, cmd.Stderr = &testWriter{t: t}, &testWriter{t: t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		b, _ := os.ReadFile(cpFile)
		if bytes.Contains(b, []byte(`"nextPartitionKey"`)) {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the copy ended (%v) before it could be killed", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the checkpoint never recorded progress")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	if err := <-exited; err == nil {
		t.Fatal("the copy finished before SIGKILL")
	}
	before := len(readTable(t, b.Endpoint(), "resume"))
	if before == 0 || before >= total {
		t.Fatalf("%d of %d entities at the destination after the kill: not mid-way", before, total)
	}

	fp.delay.Store(0)
	out := mustCopy(t, args[1:]...)
	m := regexp.MustCompile(`total: (\d+) entities`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no summary:\n%s", out)
	}
	if n, _ := strconv.Atoi(m[1]); n >= total || n == 0 {
		t.Errorf("the resumed copy wrote %d entities of %d: it did not resume from the checkpoint", n, total)
	}
	src, dst := readTable(t, a.Endpoint(), "resume"), readTable(t, b.Endpoint(), "resume")
	if len(dst) != total {
		t.Errorf("%d entities at the destination, want %d", len(dst), total)
	}
	sameTables(t, "resume", src, dst)

	// A third run finds the table done and copies nothing.
	out = mustCopy(t, args[1:]...)
	if !strings.Contains(out, "table resume: done in the checkpoint") || !strings.Contains(out, "total: 0 entities") {
		t.Errorf("third run:\n%s", out)
	}
}

// TestCopyBadInput: each bad input fails as documented.
func TestCopyBadInput(t *testing.T) {
	a, b := StartServer(t, ""), StartServer(t, "")
	seedBulk(t, sdkService(t, a.Endpoint()), "src", 2, 200, 10)
	aConn, bConn := connString(a.Endpoint(), devKey), connString(b.Endpoint(), devKey)
	wrongKey := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 64))
	bTables := func() int {
		n := 0
		pager := sdkService(t, b.Endpoint()).NewListTablesPager(nil)
		for pager.More() {
			p, err := pager.NextPage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			n += len(p.Tables)
		}
		return n
	}

	t.Run("wrong destination key", func(t *testing.T) {
		_, stderr, err := runCopy(t, "--from", aConn, "--to", connString(b.Endpoint(), wrongKey))
		if err == nil || !strings.Contains(stderr, "destination:") || !strings.Contains(stderr, "rejected the credentials: 403 AuthenticationFailed") {
			t.Errorf("err %v, stderr %q", err, stderr)
		}
		if n := bTables(); n != 0 {
			t.Errorf("%d tables at the destination: data moved", n)
		}
	})
	t.Run("wrong source key", func(t *testing.T) {
		_, stderr, err := runCopy(t, "--from", connString(a.Endpoint(), wrongKey), "--to", bConn)
		if err == nil || !strings.Contains(stderr, "source:") || !strings.Contains(stderr, "rejected the credentials") {
			t.Errorf("err %v, stderr %q", err, stderr)
		}
		if n := bTables(); n != 0 {
			t.Errorf("%d tables at the destination: data moved", n)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		dead := "http://" + l.Addr().String() + "/" + devAccount
		l.Close()
		_, stderr, err := runCopy(t, "--from", aConn, "--to", connString(dead, devKey))
		if err == nil || !strings.Contains(stderr, "destination: cannot reach "+dead) {
			t.Errorf("err %v, stderr %q", err, stderr)
		}
		_, stderr, err = runCopy(t, "--from", connString(dead, devKey), "--to", bConn)
		if err == nil || !strings.Contains(stderr, "source: cannot reach "+dead) {
			t.Errorf("err %v, stderr %q", err, stderr)
		}
		if n := bTables(); n != 0 {
			t.Errorf("%d tables at the destination: data moved", n)
		}
	})
	t.Run("bad filter", func(t *testing.T) {
		_, stderr, err := runCopy(t, "--from", aConn, "--to", bConn, "--filter", "PartitionKey gee 'x'")
		if err == nil || !strings.Contains(stderr, "--filter: source: GET /src(): 400 InvalidInput") {
			t.Errorf("err %v, stderr %q", err, stderr)
		}
		if n := bTables(); n != 0 {
			t.Errorf("%d tables at the destination: data moved", n)
		}
	})
	t.Run("export onto a full disk", func(t *testing.T) {
		// The export fails for want of space: no file takes the name, the
		// previous export there is kept, and no partial file is left. It
		// left a truncated export under the final name before.
		dir := mountTmpfs(t, "size=16k") // the export is ~34 KB
		out := filepath.Join(dir, "out.jsonl")
		if err := os.WriteFile(out, []byte("the previous export\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr, err := runCopy(t, "--from", aConn, "--to", out)
		if err == nil || !strings.Contains(stderr, "no space left on device") {
			t.Errorf("err %v, stderr %q: want a failure for want of space", err, stderr)
		}
		if b, err := os.ReadFile(out); err != nil || string(b) != "the previous export\n" {
			t.Errorf("the previous export now holds %d bytes (%v)", len(b), err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Errorf("the directory holds %v, want only out.jsonl", names)
		}
		// With room, the export replaces it whole.
		roomy := filepath.Join(t.TempDir(), "out.jsonl")
		if _, stderr, err := runCopy(t, "--from", aConn, "--to", roomy); err != nil {
			t.Fatalf("export: %v, %s", err, stderr)
		}
		entries, _ := os.ReadDir(filepath.Dir(roomy))
		if b, err := os.ReadFile(roomy); err != nil || bytes.Count(b, []byte("\n")) != 200 || len(entries) != 1 {
			t.Errorf("export of 200 entities: %d lines (%v), %d entries in its directory", bytes.Count(b, []byte("\n")), err, len(entries))
		}
	})
	t.Run("malformed line", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "in.jsonl")
		lines := `{"table":"mal","PartitionKey":"p","RowKey":"1","props":[["A","Edm.Int32","1"]]}
{"table":"mal","PartitionKey":"p","RowKey":"2","props":[["A","Edm.Int32","2"]]}
{"table":"mal","PartitionKey":"p","RowKey":"3","props":[["A","Edm.Int32","3"],["B","Edm.Int64","12x"]]}
{"table":"mal","PartitionKey":"p","RowKey":"4","props":[]}
`
		os.WriteFile(file, []byte(lines), 0o644)
		_, stderr, err := runCopy(t, "--from", file, "--to", bConn)
		if err == nil || !strings.Contains(stderr, file+`:3: property "B": "12x" is not a canonical Edm.Int64`) {
			t.Errorf("err %v, stderr %q", err, stderr)
		}
		got := readTable(t, b.Endpoint(), "mal")
		if len(got) != 2 || got[[2]string{"p", "1"}] == nil || got[[2]string{"p", "2"}] == nil {
			t.Errorf("destination holds %v, want the two entities before line 3", got)
		}
	})
	t.Run("refused entity", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "in.jsonl")
		long := strings.Repeat("z", 40000) // over the 32 Ki UTF-16 units of a string property
		lines := `{"table":"ref","PartitionKey":"p","RowKey":"1","props":[]}
{"table":"ref","PartitionKey":"p","RowKey":"too large","props":[["S","Edm.String","` + long + `"]]}
{"table":"ref","PartitionKey":"p","RowKey":"3","props":[]}
{"table":"ref","PartitionKey":"q","RowKey":"bad/key","props":[]}
{"table":"ref","PartitionKey":"q","RowKey":"5","props":[]}
`
		os.WriteFile(file, []byte(lines), 0o644)
		_, stderr, err := runCopy(t, "--from", file, "--to", bConn, "--parallel", "1")
		if err == nil || !strings.Contains(stderr, `PartitionKey="p" RowKey="too large" of table ref: PropertyValueTooLarge`) {
			t.Errorf("stop: err %v, stderr %q", err, stderr)
		}
		if got := readTable(t, b.Endpoint(), "ref"); len(got) != 0 {
			t.Errorf("stop: the refused entity's batch was partly written: %v", got)
		}
		out, _, err := runCopy(t, "--from", file, "--to", bConn, "--on-refused", "skip")
		if err == nil {
			t.Error("skip: exit status 0 although entities were refused")
		}
		for _, want := range []string{
			`refused: destination refused entity PartitionKey="p" RowKey="too large" of table ref: PropertyValueTooLarge`,
			`refused: destination refused entity PartitionKey="q" RowKey="bad/key" of table ref: `,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("skip: output lacks %s", want)
			}
		}
		got := readTable(t, b.Endpoint(), "ref")
		if len(got) != 3 || got[[2]string{"p", "1"}] == nil || got[[2]string{"p", "3"}] == nil || got[[2]string{"q", "5"}] == nil {
			t.Errorf("skip: destination holds %d entities, want p/1, p/3, q/5", len(got))
		}
	})
}

// TestCopySelection: --tables selects the tables of a file source too (it
// was ignored: restoring one table from a full export overwrote every
// other), a selection that matches nothing fails and keeps an earlier
// export (a typo replaced it with an empty file), --filter is refused with
// a file source, and two lines of one key keep one entity (the service
// refused their batch whole, and --on-refused skip dropped both).
func TestCopySelection(t *testing.T) {
	a, b := StartServer(t, ""), StartServer(t, "")
	seedBulk(t, sdkService(t, a.Endpoint()), "edge", 2, 20, 10)
	aConn, bConn := connString(a.Endpoint(), devKey), connString(b.Endpoint(), devKey)
	dir := t.TempDir()
	file := filepath.Join(dir, "in.jsonl")
	os.WriteFile(file, []byte(`{"table":"onlyme","PartitionKey":"p","RowKey":"1","props":[]}
{"table":"notme","PartitionKey":"p","RowKey":"x","props":[]}
{"table":"onlyme","PartitionKey":"p","RowKey":"2","props":[]}
`), 0o644)
	if _, stderr, err := runCopy(t, "--from", file, "--to", bConn, "--tables", "only*"); err != nil {
		t.Fatalf("file source with --tables: %v %s", err, stderr)
	}
	if got := readTable(t, b.Endpoint(), "onlyme"); len(got) != 2 {
		t.Errorf("onlyme holds %d entities, want 2", len(got))
	}
	// A name the files do not hold is told at their end (the others are
	// written), not skipped with exit 0.
	if _, stderr, err := runCopy(t, "--from", file, "--to", bConn, "--tables", "onlyme,onlyem"); err == nil || !strings.Contains(stderr, "--tables: the source's lines have no table onlyem") {
		t.Errorf("file source with --tables onlyme,onlyem: err %v, stderr %q", err, stderr)
	}
	if _, err := sdkService(t, b.Endpoint()).NewClient("notme").GetEntity(context.Background(), "p", "x", nil); err == nil {
		t.Error("a table --tables did not select was written")
	}

	export := filepath.Join(dir, "backup.jsonl")
	mustCopy(t, "--from", aConn, "--to", export, "--tables", "edge")
	before, _ := os.ReadFile(export)
	for _, src := range []string{aConn, file} {
		_, stderr, err := runCopy(t, "--from", src, "--to", export, "--tables", "edeg")
		if err == nil || !strings.Contains(stderr, "--tables edeg matches no table") {
			t.Errorf("--tables matching nothing (from %s): err %v, stderr %q", redactArgs([]string{src}), err, stderr)
		}
		if after, _ := os.ReadFile(export); !bytes.Equal(after, before) || len(before) == 0 {
			t.Errorf("the earlier export changed: %d bytes, was %d", len(after), len(before))
		}
	}

	// A mistyped name in a list is told, not skipped while the others are
	// copied (exit 0, the export without it), and verified alike; names
	// match in any case, as the service's table names do.
	_, stderr, err := runCopy(t, "--from", aConn, "--to", export, "--tables", "edge,edeg")
	if err == nil || !strings.Contains(stderr, "--tables: the source has no table edeg") {
		t.Errorf("--tables edge,edeg: err %v, stderr %q", err, stderr)
	}
	if after, _ := os.ReadFile(export); !bytes.Equal(after, before) {
		t.Errorf("the earlier export changed under a mistyped list")
	}
	if _, stderr, err = runCopy(t, "--from", aConn, "--to", export, "--tables", "edge,edeg", "--verify"); err == nil || !strings.Contains(stderr, "--tables: neither side has a table edeg") {
		t.Errorf("--verify --tables edge,edeg: err %v, stderr %q", err, stderr)
	}
	mustCopy(t, "--from", aConn, "--to", export, "--tables", "EDGE")
	lines := func(b []byte) []string { l := strings.Split(string(b), "\n"); slices.Sort(l); return l }
	if after, _ := os.ReadFile(export); !slices.Equal(lines(after), lines(before)) { // ranges are written in any order
		t.Errorf("--tables EDGE exported something else than --tables edge:\n%.300s\nwas\n%.300s", after, before)
	}

	if _, stderr, err := runCopy(t, "--from", file, "--to", bConn, "--filter", "PartitionKey eq 'p'"); err == nil || !strings.Contains(stderr, "--filter selects the entities of an endpoint source") {
		t.Errorf("--filter with a file source: err %v, stderr %q", err, stderr)
	}
	// With --verify too (it compared the filtered endpoint with the whole
	// file, and reported every entity left out as a difference), and with
	// the file on the other side.
	if _, stderr, err := runCopy(t, "--from", file, "--to", bConn, "--filter", "PartitionKey eq 'p'", "--verify"); err == nil || !strings.Contains(stderr, "--filter selects the entities of an endpoint source") {
		t.Errorf("--filter --verify with a file source: err %v, stderr %q", err, stderr)
	}
	if _, stderr, err := runCopy(t, "--from", bConn, "--to", file, "--filter", "PartitionKey eq 'p'", "--verify"); err == nil || !strings.Contains(stderr, "--filter with --verify needs an endpoint on both sides") {
		t.Errorf("--filter --verify with a file destination: err %v, stderr %q", err, stderr)
	}
	if _, stderr, err := runCopy(t, "--from", file, "--to", bConn, "--tables", "only[*"); err == nil || !strings.Contains(stderr, `--tables: bad pattern "only[*"`) {
		t.Errorf("a bad --tables pattern with a file source: err %v, stderr %q", err, stderr)
	}
	// Every writer holds a batch and a page: a million of them took 2.7 GB.
	if _, stderr, err := runCopy(t, "--from", file, "--to", bConn, "--parallel", "1000000"); err == nil || !strings.Contains(stderr, "--parallel 1000000: at most 256") {
		t.Errorf("--parallel 1000000: err %v, stderr %q", err, stderr)
	}

	dup := filepath.Join(dir, "dup.jsonl")
	os.WriteFile(dup, []byte(`{"table":"dupk","PartitionKey":"p","RowKey":"a","props":[["V","Edm.Int32","1"]]}
{"table":"dupk","PartitionKey":"p","RowKey":"a","props":[["V","Edm.Int32","2"]]}
{"table":"dupk","PartitionKey":"p","RowKey":"b","props":[["V","Edm.Int32","3"]]}
{"table":"dupk","PartitionKey":"p","RowKey":"a","props":[["V","Edm.Int32","4"]]}
`), 0o644)
	for _, args := range [][]string{{"--parallel", "1"}, {"--on-refused", "skip"}} {
		if _, stderr, err := runCopy(t, append([]string{"--from", dup, "--to", bConn}, args...)...); err != nil {
			t.Errorf("%v: a key on two lines: %v %s", args, err, stderr)
		}
		got := readTable(t, b.Endpoint(), "dupk")
		if len(got) != 2 || got[[2]string{"p", "a"}] == nil {
			t.Errorf("%v: dupk holds %v, want a and b", args, got)
		}
	}
}

// TestCopySAS: an account SAS URL as the source and a table SAS URL (write
// permissions only) as the destination, whose one table takes the
// source's table whatever its name.
func TestCopySAS(t *testing.T) {
	a, b := StartServer(t, ""), StartServer(t, "")
	aSvc, bSvc := sdkService(t, a.Endpoint()), sdkService(t, b.Endpoint())
	seedBulk(t, aSvc, "sassrc", 3, 600, 50)
	if _, err := bSvc.CreateTable(context.Background(), "sasdst", nil); err != nil {
		t.Fatal(err)
	}
	// Signed here rather than with GetAccountSASURL and GetTableSASURL: the
	// first always sets spr=https, the second joins the table name to the
	// endpoint without a slash.
	cred, _ := aztables.NewSharedKeyCredential(devAccount, devKey)
	now := time.Now().UTC()
	qp, err := aztables.AccountSASSignatureValues{
		Protocol: aztables.SASProtocolHTTPSandHTTP, StartTime: now.Add(-time.Hour), ExpiryTime: now.Add(time.Hour),
		Permissions:   aztables.AccountSASPermissions{Read: true, List: true}.String(),
		Services:      "t",
		ResourceTypes: aztables.AccountSASResourceTypes{Service: true, Container: true, Object: true}.String(),
	}.Sign(cred)
	if err != nil {
		t.Fatal(err)
	}
	srcURL := a.Endpoint() + "/?" + qp.Encode()
	tq, err := aztables.SASSignatureValues{
		TableName: "sasdst", StartTime: now.Add(-time.Hour), ExpiryTime: now.Add(time.Hour),
		Permissions: aztables.SASPermissions{Add: true, Update: true}.String(),
	}.Sign(cred)
	if err != nil {
		t.Fatal(err)
	}
	dstURL := b.Endpoint() + "/sasdst?" + tq
	out := mustCopy(t, "--from", srcURL, "--to", dstURL)
	if !strings.Contains(out, "table sassrc: 600 entities") {
		t.Errorf("summary:\n%s", out)
	}
	sameTables(t, "sas", readTable(t, a.Endpoint(), "sassrc"), readTable(t, b.Endpoint(), "sasdst"))

	// Entities a key-range SAS refuses, skipped under a checkpoint: the run
	// that resumes it, finding every range done, still says they were
	// refused (it exited 0 before, the entities never copied).
	seedBulk(t, aSvc, "onepart", 6, 6, 10) // one entity per partition: part-000-é … part-005-é
	if _, err := bSvc.CreateTable(context.Background(), "rangedst", nil); err != nil {
		t.Fatal(err)
	}
	rq := sasSpec{table: "rangedst", perms: "au", spk: "part-000", epk: "part-002"}.build(t)
	ckpt := filepath.Join(t.TempDir(), "range.ckpt")
	rangeArgs := []string{"--from", connString(a.Endpoint(), devKey), "--to", b.Endpoint() + "/rangedst?" + rq, "--tables", "onepart", "--on-refused", "skip", "--checkpoint", ckpt}
	for run := 1; run <= 2; run++ {
		_, stderr, err := runCopy(t, rangeArgs...)
		if err == nil || !strings.Contains(stderr, "refused some entities: 4") {
			t.Errorf("run %d: err %v, stderr %q: want the 4 refused entities reported", run, err, stderr)
		}
	}
	if got := readTable(t, b.Endpoint(), "rangedst"); len(got) != 2 {
		t.Errorf("rangedst holds %d entities, want the 2 in the SAS's range", len(got))
	}
	// Killed in the middle of a page that had a refusal, and resumed: the
	// page is copied again and its refusals counted once (they were
	// recorded one by one ahead of the page's progress, and counted again
	// by the resumed run: 5 reported for 4).
	if _, err := bSvc.CreateTable(context.Background(), "rangedst3", nil); err != nil {
		t.Fatal(err)
	}
	fp := startFaultProxy(t, b.URL, 0)
	fp.stallAfter.Store(3) // part-000-é and part-001-é written, part-002-é refused, then the stall
	rq3 := sasSpec{table: "rangedst3", perms: "au", spk: "part-000", epk: "part-002"}.build(t)
	ckpt3 := filepath.Join(t.TempDir(), "range3.ckpt")
	args3 := []string{"copy", "--progress", "none", "--from", connString(a.Endpoint(), devKey), "--to", fp.URL + "/" + devAccount + "/rangedst3?" + rq3,
		"--tables", "onepart", "--on-refused", "skip", "--parallel", "1", "--checkpoint", ckpt3}
	cmd := exec.Command(partitaBin, args3...)
	cmd.Stdout, cmd.Stderr = &testWriter{t: t}, &testWriter{t: t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); fp.batches.Load() < 4; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the copy sent %d batches, never reaching the stall", fp.batches.Load())
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	fp.stallAfter.Store(0)
	if _, stderr, err := runCopy(t, args3[3:]...); err == nil || !regexp.MustCompile(`refused some entities: 4\b`).MatchString(stderr) {
		t.Errorf("resumed after a kill mid-page: err %v, stderr %q: want the 4 refused entities reported once", err, stderr)
	}
	if got := readTable(t, b.Endpoint(), "rangedst3"); len(got) != 2 {
		t.Errorf("rangedst3 holds %d entities, want the 2 in the SAS's range", len(got))
	}
	// Several entities a partition: the SAS refuses a whole batch without
	// naming an entity, and skip sends it again one entity at a time (it
	// stopped the copy at the first batch that held one, nothing copied).
	seedBulk(t, aSvc, "manypart", 5, 50, 10) // 10 a partition: part-000-é … part-004-é
	if _, err := bSvc.CreateTable(context.Background(), "rangedst2", nil); err != nil {
		t.Fatal(err)
	}
	rq2 := sasSpec{table: "rangedst2", perms: "au", spk: "part-001", epk: "part-003"}.build(t) // part-001-é, part-002-é
	_, stderr, err := runCopy(t, "--from", connString(a.Endpoint(), devKey), "--to", b.Endpoint()+"/rangedst2?"+rq2, "--tables", "manypart", "--on-refused", "skip", "--parallel", "1")
	if err == nil || !strings.Contains(stderr, "refused some entities: 30") {
		t.Errorf("batches refused whole: err %v, stderr %q: want 30 refused entities reported", err, stderr)
	}
	if got := readTable(t, b.Endpoint(), "rangedst2"); len(got) != 20 {
		t.Errorf("rangedst2 holds %d entities, want the 20 in the SAS's range", len(got))
	}

	// A SAS with a wrong signature fails before anything moves, naming the side.
	bad := strings.Replace(srcURL, "sig=", "sig=AAAA", 1)
	_, stderr, err = runCopy(t, "--from", bad, "--to", filepath.Join(t.TempDir(), "x.jsonl"))
	if err == nil || !strings.Contains(stderr, "source:") || !strings.Contains(stderr, "rejected the credentials: 403 AuthenticationFailed") {
		t.Errorf("bad SAS: err %v, stderr %q", err, stderr)
	}
}

// TestCopySecondInterruptEnds: a copy blocked reading a FIFO (which no
// context reaches) ignores nothing: the first SIGINT asks for a clean stop,
// and a second one ends the process (later signals used to be swallowed).
func TestCopySecondInterruptEnds(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "in.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// A writer that never writes: the copy's read blocks.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cmd := exec.Command(partitaBin, "copy", "--progress", "none", "--from", fifo, "--to", filepath.Join(dir, "out"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	exited := make(chan struct{})
	go func() { done <- cmd.Wait(); close(exited) }()
	defer func() {
		cmd.Process.Kill() // fails harmlessly once it has exited
		<-exited
	}()
	time.Sleep(time.Second) // the copy is reading the FIFO
	cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-done:
		t.Logf("exited on the first SIGINT: %v", err)
		return
	case <-time.After(500 * time.Millisecond):
	}
	cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-done:
		if err == nil {
			t.Error("exit status 0 after two interrupts")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("partita copy still running 5 s after a second SIGINT")
	}
}
