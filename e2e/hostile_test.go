package e2e

// Hostile HTTP clients (issue #17): slow bodies, bodies that never come,
// bodies shorter than declared, and many large batches at once must not
// deny service to anyone else nor exhaust memory.

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// otherAccount is a second account for the fairness tests.
var (
	otherAccount = "otheraccount"
	otherKey     = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("partita-other-account-key"), 3))
	twoAccounts  = devAccount + ":" + devKey + ";" + otherAccount + ":" + otherKey
)

// liteHeaders are the SharedKeyLite headers of a request by account to
// rawPath (the escaped path after the host, which starts with the account;
// path style signs the account name once more before it).
func liteHeaders(account, key, rawPath string) map[string]string {
	k, _ := base64.StdEncoding.DecodeString(key)
	date := time.Now().UTC().Format(http.TimeFormat)
	m := hmac.New(sha256.New, k)
	m.Write([]byte(date + "\n/" + account + rawPath))
	return map[string]string{
		"x-ms-date":     date,
		"x-ms-version":  "2019-02-02",
		"Accept":        "application/json;odata=minimalmetadata",
		"Authorization": "SharedKeyLite " + account + ":" + base64.StdEncoding.EncodeToString(m.Sum(nil)),
	}
}

// sendHead writes a request's line and headers, declaring contentLength,
// and nothing of its body.
func sendHead(w io.Writer, host, method, target string, h map[string]string, contentLength int64) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, target, host)
	for k, v := range h {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", contentLength)
	_, err := io.WriteString(w, b.String())
	return err
}

func serverHost(s *Server) string { return strings.TrimPrefix(s.URL, "http://") }

// keyedInsert inserts an entity with an account key over a fresh
// connection and returns the status and how long it took.
func keyedInsert(client *http.Client, s *Server, account, key, table, rk string) (int, string, time.Duration) {
	path := "/" + account + "/" + table
	req, _ := http.NewRequest("POST", s.URL+path, strings.NewReader(`{"PartitionKey":"p","RowKey":"`+rk+`"}`))
	for k, v := range liteHeaders(account, key, path) {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Prefer", "return-no-content")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error(), time.Since(start)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("x-ms-error-code"), time.Since(start)
}

// createTableAs creates a table with an account key.
func createTableAs(t *testing.T, s *Server, account, key, table string) {
	t.Helper()
	path := "/" + account + "/Tables"
	req, _ := http.NewRequest("POST", s.URL+path, strings.NewReader(`{"TableName":"`+table+`"}`))
	for k, v := range liteHeaders(account, key, path) {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("create table %s/%s: %s", account, table, resp.Status)
	}
}

// TestHostile_SlowBodiesOfOneSAS: 300 connections send the headers of a
// $batch with a read-only SAS of one account and then trickle their
// bodies, one byte at a time, reconnecting whenever the server gives up
// on them. Meanwhile another account, and the attacked account's own key,
// must be served promptly. Before the fix every attacker took a request
// slot before it was authorized and held it while its body trickled in, so
// everyone else got 503 ServerBusy.
func TestHostile_SlowBodiesOfOneSAS(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	s := StartServer(t, "", "--accounts", twoAccounts, "--max-inflight", "16")
	host := serverHost(s)
	createTableAs(t, s, devAccount, devKey, "attacked")
	createTableAs(t, s, otherAccount, otherKey, "bystander")
	sas := sasSpec{table: "attacked", perms: "r"}.build(t)

	stop := make(chan struct{})
	var attackers sync.WaitGroup
	var connections atomic.Int64
	for i := 0; i < 300; i++ {
		attackers.Add(1)
		go func(i int) {
			defer attackers.Done()
			// Half declare a maximum-size batch, half a small body
			// that could be a retrieve batch.
			length := int64(4 << 20)
			if i%2 == 1 {
				length = 1000
			}
			for {
				c, err := net.Dial("tcp", host)
				if err == nil {
					connections.Add(1)
					err = sendHead(c, host, "POST", "/"+devAccount+"/$batch?"+sas,
						map[string]string{"Content-Type": "multipart/mixed; boundary=batch_x"}, length)
				}
				tick := time.NewTicker(200 * time.Millisecond)
				for err == nil {
					select {
					case <-stop:
						tick.Stop()
						c.Close()
						return
					case <-tick.C:
						_, err = c.Write([]byte("-"))
					}
				}
				tick.Stop()
				if c != nil {
					c.Close()
				}
				select {
				case <-stop:
					return
				case <-time.After(time.Second):
				}
			}
		}(i)
	}
	defer func() {
		close(stop)
		attackers.Wait()
	}()
	time.Sleep(2 * time.Second) // let the attack fill whatever it can

	client := &http.Client{Timeout: 20 * time.Second}
	var worst time.Duration
	end := time.Now().Add(8 * time.Second)
	for i := 0; time.Now().Before(end); i++ {
		for _, who := range []struct{ account, key, table string }{
			{otherAccount, otherKey, "bystander"},
			{devAccount, devKey, "attacked"},
		} {
			st, code, took := keyedInsert(client, s, who.account, who.key, who.table, strconv.Itoa(i))
			if st != 204 {
				t.Fatalf("%s during the attack: insert %d: %d %s after %v", who.account, i, st, code, took)
			}
			worst = max(worst, took)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("%d attacking connections; slowest insert of the others %v", connections.Load(), worst)
	if connections.Load() < 300 {
		t.Fatalf("only %d attacking connections were made", connections.Load())
	}
	if worst > 5*time.Second {
		t.Errorf("an insert of another client took %v during the attack, want prompt service", worst)
	}
}

// rawExchange sends a request's head (and body, if any) on a fresh
// connection and reads the response, giving up after wait.
func rawExchange(t *testing.T, s *Server, method, target string, h map[string]string, contentLength int64, body string, closeWrite bool, wait time.Duration) (*http.Response, error) {
	t.Helper()
	resp, _, err := rawExchangeConn(t, s, method, target, h, contentLength, body, closeWrite, wait)
	return resp, err
}

// closedWithin reports whether the server closes the connection behind br
// within d (reads end without data).
func closedWithin(c net.Conn, br *bufio.Reader, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	n, err := br.Read(make([]byte, 1))
	return n == 0 && err == io.EOF || errors.Is(err, syscall.ECONNRESET)
}

// rawExchangeConn is rawExchange that also returns a reader of the rest of
// the connection.
func rawExchangeConn(t *testing.T, s *Server, method, target string, h map[string]string, contentLength int64, body string, closeWrite bool, wait time.Duration) (*http.Response, *connReader, error) {
	t.Helper()
	host := serverHost(s)
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(wait))
	if err := sendHead(c, host, method, target, h, contentLength); err != nil {
		return nil, nil, err
	}
	if body != "" {
		if _, err := io.WriteString(c, body); err != nil {
			return nil, nil, err
		}
	}
	if closeWrite {
		c.(*net.TCPConn).CloseWrite()
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, nil, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, &connReader{c, br}, nil
}

// connReader is a connection and its reader, past a response.
type connReader struct {
	c  net.Conn
	br *bufio.Reader
}

// TestHostile_RefusedBodiesAreNotRead: a request that is not authenticated,
// whose SAS cannot allow it, or whose declared body is over the limit, is
// answered as soon as its headers are in, without waiting for a body that
// never comes, and its connection is closed. Before the fix each of these waited for the body (the server's
// 2-minute read timeout).
func TestHostile_RefusedBodiesAreNotRead(t *testing.T) {
	s := StartServer(t, "")
	const tbl = "unread"
	if _, err := serviceClient(t, s).CreateTable(ctx, tbl, nil); err != nil {
		t.Fatal(err)
	}
	readOnly := sasSpec{table: tbl, perms: "r"}.build(t)
	badSig := liteHeaders(devAccount, devKey, "/"+devAccount+"/elsewhere")
	badSig["Content-Type"] = "application/json"
	signed := liteHeaders(devAccount, devKey, "/"+devAccount+"/"+tbl)
	signed["Content-Type"] = "application/json"
	json := map[string]string{"Content-Type": "application/json", "x-ms-version": "2019-02-02"}
	batch := map[string]string{"Content-Type": "multipart/mixed; boundary=batch_x", "x-ms-version": "2019-02-02"}
	// A preflight is answered without authentication when a rule allows it.
	if _, err := serviceClient(t, s).SetProperties(ctx, aztables.ServiceProperties{Cors: []*aztables.CorsRule{{AllowedOrigins: to.Ptr("*"), AllowedMethods: to.Ptr("GET"), AllowedHeaders: to.Ptr("*"), ExposedHeaders: to.Ptr("*"), MaxAgeInSeconds: to.Ptr[int32](5)}}}, nil); err != nil {
		t.Fatal(err)
	}
	preflight := map[string]string{"Origin": "https://a.example", "Access-Control-Request-Method": "GET"}
	for _, tc := range []struct {
		name, method, target string
		h                    map[string]string
		length               int64
		want                 string
	}{
		// Unauthenticated paths that answer 200 held the connection for
		// the 2-minute read timeout while net/http waited for the body.
		{"console file", "GET", "/_partita/console/", nil, 1000, "200 "},
		{"console, a POST", "POST", "/_partita/console/", nil, 1000, "405 "},
		{"CORS preflight", "OPTIONS", "/" + devAccount + "/Tables", preflight, 1000, "200 "},
		{"bad signature", "POST", "/" + devAccount + "/" + tbl, badSig, 100000, "403 AuthenticationFailed"},
		{"bad signature, 1 GiB declared", "POST", "/" + devAccount + "/" + tbl, badSig, 1 << 30, "403 AuthenticationFailed"},
		{"signed, 1 GiB declared", "POST", "/" + devAccount + "/" + tbl, signed, 1 << 30, "413 RequestBodyTooLarge"},
		{"no credentials", "PUT", "/" + devAccount + "/" + tbl + "(PartitionKey='p',RowKey='r')", json, 100000, "403 AuthenticationFailed"},
		{"read-only SAS batch", "POST", "/" + devAccount + "/$batch?" + readOnly, batch, 4 << 20, "403 AuthorizationPermissionMismatch"},
		{"read-only SAS batch under 256 KiB", "POST", "/" + devAccount + "/$batch?" + readOnly, batch, 200 << 10, "403 AuthorizationPermissionMismatch"},
		{"table SAS creates a table", "POST", "/" + devAccount + "/Tables?" + readOnly, json, 1000, "403 AuthorizationFailure"},
		{"read-only SAS inserts", "POST", "/" + devAccount + "/" + tbl + "?" + readOnly, json, 1000, "403 AuthorizationPermissionMismatch"},
	} {
		start := time.Now()
		resp, cr, err := rawExchangeConn(t, s, tc.method, tc.target, tc.h, tc.length, "", false, 10*time.Second)
		if err != nil {
			t.Errorf("%s: no answer without the body after %v: %v", tc.name, time.Since(start), err)
			continue
		}
		if got := fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("x-ms-error-code")); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
		if !resp.Close {
			t.Errorf("%s: connection kept open with an unread body", tc.name)
		}
		// Said and done: the socket closes, rather than net/http reading
		// (up to 256 KiB of) the body for the 2-minute read timeout.
		if !closedWithin(cr.c, cr.br, 3*time.Second) {
			t.Errorf("%s: Connection: close, but the socket still open 3 s later", tc.name)
		}
	}
	// What a read-only SAS may send as a batch, a retrieve batch, still works.
	if _, err := serviceClient(t, s).NewClient(tbl).AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"r"}`), nil); err != nil {
		t.Fatal(err)
	}
	retrieve := strings.Join([]string{"--batch_x", "Content-Type: application/http", "Content-Transfer-Encoding: binary", "",
		"GET " + s.Endpoint() + "/" + tbl + "(PartitionKey='p',RowKey='r') HTTP/1.1", "Accept: application/json;odata=minimalmetadata", "", "",
		"--batch_x--", ""}, "\r\n")
	req, _ := http.NewRequest("POST", s.Endpoint()+"/$batch?"+readOnly, strings.NewReader(retrieve))
	for k, v := range batch {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 202 || !strings.Contains(string(b), "HTTP/1.1 200") {
		t.Errorf("retrieve batch with a read-only SAS: %d %s", resp.StatusCode, b)
	}
}

// TestHostile_ShortBody: a body that ends before its Content-Length is a
// client error, not a server failure. Before the fix it was
// 500 InternalError.
func TestHostile_ShortBody(t *testing.T) {
	s := StartServer(t, "")
	const tbl = "shortbody"
	if _, err := serviceClient(t, s).CreateTable(ctx, tbl, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path, ct, body string }{
		{"insert", "/" + devAccount + "/" + tbl, "application/json", `{"PartitionKey":"p","RowKey":"r"`},
		{"batch", "/" + devAccount + "/$batch", "multipart/mixed; boundary=batch_x", "--batch_x\r\nContent-Type: multipart/mixed; boundary=changeset_x\r\n\r\n"},
		{"create table", "/" + devAccount + "/Tables", "application/json", `{"TableName":`},
	} {
		h := liteHeaders(devAccount, devKey, tc.path)
		h["Content-Type"] = tc.ct
		resp, err := rawExchange(t, s, "POST", tc.path, h, int64(len(tc.body))+100, tc.body, true, 20*time.Second)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if resp.StatusCode != 400 || resp.Header.Get("x-ms-error-code") != "InvalidInput" {
			t.Errorf("%s: short body: %d %s, want 400 InvalidInput", tc.name, resp.StatusCode, resp.Header.Get("x-ms-error-code"))
		}
	}
	// Nothing was written.
	if _, err := serviceClient(t, s).NewClient(tbl).GetEntity(ctx, "p", "r", nil); codeOf(err) != "404 ResourceNotFound" {
		t.Errorf("entity of a short body: %s, want 404 ResourceNotFound", codeOf(err))
	}
}

// vmHWMKB is a process's peak resident set size from /proc.
func vmHWMKB(t *testing.T, pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return n
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// writeBigBatch writes a changeset of 100 inserts of 40,000-character
// entities into partition pk; mid is called after the first 50, and an
// error from it ends the body there.
func writeBigBatch(w io.Writer, table, pk, payload string, mid func() error) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString("--batch_big\r\nContent-Type: multipart/mixed; boundary=changeset_big\r\n\r\n")
	for i := 0; i < 100; i++ {
		if i == 50 && mid != nil {
			if err := bw.Flush(); err != nil {
				return err
			}
			if err := mid(); err != nil {
				return err
			}
		}
		entity := `{"PartitionKey":"` + pk + `","RowKey":"` + fmt.Sprintf("r%03d", i) + `","D":"` + payload + `"}`
		fmt.Fprintf(bw, "--changeset_big\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"+
			"POST http://127.0.0.1/%s/%s HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json;odata=minimalmetadata\r\nPrefer: return-no-content\r\nContent-Length: %d\r\n\r\n%s\r\n",
			devAccount, table, len(entity), entity)
	}
	bw.WriteString("--changeset_big--\r\n--batch_big--\r\n")
	return bw.Flush()
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// TestHostile_ManyLargeBatches: 48 clients send maximum-size (4 MiB)
// batches at once to a server on default settings, each pausing halfway
// through its body so that they really are in flight together. Request
// bodies beyond the body budget get 503 ServerBusy with Retry-After before
// they are read, and the server's peak resident memory stays under
// 500 MB. Before the fix every body was read (no 503), and memory grew
// with the number of batches.
func TestHostile_ManyLargeBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	s := StartServer(t, "")
	const tbl = "bigbatches"
	if _, err := serviceClient(t, s).CreateTable(ctx, tbl, nil); err != nil {
		t.Fatal(err)
	}
	payload := strings.Repeat("x", 40000)
	var cw countingWriter
	writeBigBatch(&cw, tbl, "p00", payload, nil)
	if cw.n > 4<<20 {
		t.Fatalf("test batch is %d bytes, over the 4 MiB limit", cw.n)
	}
	host := serverHost(s)
	const clients = 48
	var halfSent sync.WaitGroup
	halfSent.Add(clients)
	release := make(chan struct{})
	type result struct {
		status int
		code   string
		retry  string
		err    error
	}
	results := make(chan result, clients)
	for i := 0; i < clients; i++ {
		go func(i int) {
			c, err := net.Dial("tcp", host)
			if err != nil {
				halfSent.Done()
				results <- result{err: err}
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(3 * time.Minute))
			h := liteHeaders(devAccount, devKey, "/"+devAccount+"/$batch")
			h["Content-Type"] = "multipart/mixed; boundary=batch_big"
			got := make(chan result, 1)
			sendHead(c, host, "POST", "/"+devAccount+"/$batch", h, cw.n)
			go func() {
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					got <- result{err: err}
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				got <- result{status: resp.StatusCode, code: resp.Header.Get("x-ms-error-code"), retry: resp.Header.Get("Retry-After")}
			}()
			var answered *result
			var once sync.Once
			defer once.Do(halfSent.Done) // when the first half could not be sent
			writeBigBatch(c, tbl, fmt.Sprintf("p%02d", i), payload, func() error {
				once.Do(halfSent.Done)
				<-release
				select {
				case r := <-got: // refused before its body was read
					answered = &r
					return io.EOF
				default:
					return nil
				}
			})
			if answered == nil {
				r := <-got
				answered = &r
			}
			results <- *answered
		}(i)
	}
	halfSent.Wait()
	time.Sleep(3 * time.Second) // longer than --queue-wait: whoever waits for room gives up
	close(release)
	var accepted, busy int
	for i := 0; i < clients; i++ {
		r := <-results
		switch {
		case r.err != nil:
			t.Errorf("batch: %v", r.err)
		case r.status == 202:
			accepted++
		case r.status == 503 && r.code == "ServerBusy" && r.retry != "":
			busy++
		default:
			t.Errorf("batch: %d %s (Retry-After %q)", r.status, r.code, r.retry)
		}
	}
	peak := vmHWMKB(t, s.cmd.Process.Pid)
	t.Logf("%d batches accepted, %d ServerBusy; peak RSS %d MB", accepted, busy, peak/1024)
	if accepted == 0 {
		t.Error("no batch was accepted")
	}
	if busy == 0 {
		t.Error("every batch was read at once: no 503 ServerBusy over the body budget")
	}
	if peak > 500*1024 {
		t.Errorf("peak RSS %d MB with %d maximum-size batches, want < 500 MB", peak/1024, clients)
	}
}

// TestHostile_SlowBodyDeadline: a body that arrives slower than
// --body-min-rate-kb is given up on after --body-timeout plus its length at
// that rate (here about 10 s on the defaults) with 400 InvalidInput and a
// closed connection, and nothing is written. Before the fix only the
// 2-minute read timeout ended it.
func TestHostile_SlowBodyDeadline(t *testing.T) {
	s := StartServer(t, "")
	const tbl = "slowbody"
	if _, err := serviceClient(t, s).CreateTable(ctx, tbl, nil); err != nil {
		t.Fatal(err)
	}
	host := serverHost(s)
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	path := "/" + devAccount + "/" + tbl
	h := liteHeaders(devAccount, devKey, path)
	h["Content-Type"] = "application/json"
	body := `{"PartitionKey":"p","RowKey":"r","D":"` + strings.Repeat("x", 900) + `"}`
	if err := sendHead(c, host, "POST", path, h, int64(len(body))); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() { // a byte every 100 ms: about 10 bytes a second
		for i := 0; i < len(body); i++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := c.Write([]byte{body[i]}); err != nil {
				return
			}
		}
	}()
	start := time.Now()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a trickling body after %v: %v", time.Since(start), err)
	}
	resp.Body.Close()
	t.Logf("trickling body refused after %v", time.Since(start))
	if resp.StatusCode != 400 || resp.Header.Get("x-ms-error-code") != "InvalidInput" || !resp.Close {
		t.Errorf("trickling body: %d %s (close %v), want 400 InvalidInput and a closed connection", resp.StatusCode, resp.Header.Get("x-ms-error-code"), resp.Close)
	}
	if _, err := serviceClient(t, s).NewClient(tbl).GetEntity(ctx, "p", "r", nil); codeOf(err) != "404 ResourceNotFound" {
		t.Errorf("entity of a trickling body: %s, want 404 ResourceNotFound", codeOf(err))
	}
}

// TestHostile_SlowPageReaders: 120 connections ask for 8 MiB query pages
// ($select of 1,000 missing names makes each small entity ~12 KB of JSON)
// and never read them. A page is built whole before it is written, and a
// writer blocked on a reader that does not read keeps it for up to the
// 2-minute write timeout: the server held 1 GiB before pages were counted
// in the body budget. Now pages past their first 256 KiB take room in it
// and end early (with a continuation) when there is none, so the server
// stays small, and another client still pages through every entity once.
func TestHostile_SlowPageReaders(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	s := StartServer(t, "")
	const tbl = "slowpages"
	svc := serviceClient(t, s)
	if _, err := svc.CreateTable(ctx, tbl, nil); err != nil {
		t.Fatal(err)
	}
	c := svc.NewClient(tbl)
	const entities = 1000
	for b := 0; b < entities/100; b++ {
		var actions []aztables.TransactionAction
		for i := 0; i < 100; i++ {
			actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd,
				Entity: mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": fmt.Sprintf("%04d", b*100+i), "v": i})})
		}
		if _, err := c.SubmitTransaction(ctx, actions, nil); err != nil {
			t.Fatal(err)
		}
	}
	names := make([]string, 0, 1001)
	for i := 0; i < 1000; i++ {
		names = append(names, fmt.Sprintf("q%03d", i))
	}
	names = append(names, "RowKey")
	sel := strings.Join(names, ",")

	// What the 8 MiB cap alone gives a first page, with the budget free.
	first, err := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Select: &sel}).NextPage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	capped := len(first.Entities)

	host := serverHost(s)
	const readers = 120
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < readers; i++ {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		c.(*net.TCPConn).SetReadBuffer(4096)
		conns = append(conns, c)
		target := "/" + devAccount + "/" + tbl + "()?$select=" + sel
		h := liteHeaders(devAccount, devKey, "/"+devAccount+"/"+tbl+"()")
		if err := sendHead(c, host, "GET", target, h, 0); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3 * time.Second) // the pages are built and their writes block

	// Another client pages through the table with the same selection.
	pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Select: &sel})
	seen := map[string]bool{}
	var pageSizes []int
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pageSizes = append(pageSizes, len(page.Entities))
		for _, raw := range page.Entities {
			var e map[string]any
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatal(err)
			}
			rk, _ := e["RowKey"].(string)
			if seen[rk] {
				t.Fatalf("entity %s twice", rk)
			}
			seen[rk] = true
		}
	}
	peak := vmHWMKB(t, s.cmd.Process.Pid)
	t.Logf("%d slow readers; the other client read %d entities in pages of %v (%d with the budget free); peak RSS %d MB", readers, len(seen), pageSizes, capped, peak/1024)
	if len(seen) != entities {
		t.Errorf("read %d entities, want %d", len(seen), entities)
	}
	// The 8 MiB cap alone ends the first page after ~690 of these 12 KB
	// entities (1,000 selected names, null each). The budget is held by
	// readers whose pages did not fit their sockets' buffers: the room
	// left is less than 8 MiB, so the first page ends earlier (after 20
	// to 610 entities in runs; how much the readers hold depends on the
	// kernel's socket buffers).
	if pageSizes[0] >= capped {
		t.Errorf("the first page holds %d entities, as many as with the budget free (%d): with the body budget held by the slow readers, it should end early", pageSizes[0], capped)
	}
	if peak > 400*1024 {
		t.Errorf("peak RSS %d MB with %d readers of 8 MiB pages, want < 400 MB", peak/1024, readers)
	}
}

// TestHostile_QueryWithUnsentBody: a signed query that declares a body
// and never sends it. No handler reads a body on a GET, but net/http
// discards up to 256 KiB of one before writing a response larger than its
// buffer, inside the handler: the request held its slot for the server's
// 2-minute read timeout, and with --max-inflight 1 every other request got
// 503 ServerBusy meanwhile. The discard now has a body's deadline
// (--body-timeout plus the declared length at --body-min-rate-kb).
func TestHostile_QueryWithUnsentBody(t *testing.T) {
	s := StartServer(t, "", "--max-inflight", "1", "--body-timeout", "1s")
	const tbl = "unsentbody"
	c := serviceClient(t, s).NewClient(tbl)
	if _, err := c.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 20 { // a page well over net/http's 2 KiB response buffer
		e := fmt.Sprintf(`{"PartitionKey":"p","RowKey":"r%02d","V":%q}`, i, strings.Repeat("v", 300))
		if _, err := c.AddEntity(ctx, []byte(e), nil); err != nil {
			t.Fatal(err)
		}
	}
	host := serverHost(s)
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	target := "/" + devAccount + "/" + tbl + "()"
	h := liteHeaders(devAccount, devKey, target)
	h["Accept"] = "application/json;odata=nometadata"
	if err := sendHead(conn, host, "GET", target, h, 100000); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // it takes the only slot
	start := time.Now()
	for {
		code, _, _ := keyedGet(s, target)
		if code == http.StatusOK {
			t.Logf("another request served %v after the hostile one", time.Since(start).Round(100*time.Millisecond))
			break
		}
		if code != http.StatusServiceUnavailable || time.Since(start) > 15*time.Second {
			t.Fatalf("another query: %d after %v; want 200 once the unsent body's deadline (~2.5 s) passes", code, time.Since(start))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// keyedGet sends a signed GET of target over a fresh connection.
func keyedGet(s *Server, target string) (int, string, error) {
	req, _ := http.NewRequest("GET", s.URL+target, nil)
	for k, v := range liteHeaders(devAccount, devKey, target) {
		req.Header.Set(k, v)
	}
	req.Close = true
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}
