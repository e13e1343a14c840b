package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// TestSASEmptyRangeIsNoRange: a table SAS with spk, srk, epk or erk sent
// empty signs exactly like one without them, so the server must grant both
// the same access. (Enforcing the empty bound would refuse what the token
// holder reaches anyway by dropping the parameter.)
func TestSASEmptyRangeIsNoRange(t *testing.T) {
	s := StartServer(t, "")
	svc := serviceClient(t, s)
	const tbl = "emptyrange"
	if _, err := svc.CreateTable(ctx, tbl, nil); err != nil {
		t.Fatal(err)
	}
	admin := svc.NewClient(tbl)
	for _, pk := range []string{"a", "m", "z"} {
		if _, err := admin.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": pk, "RowKey": "r"}), nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		spec  sasSpec
		empty []string // parameters added with an empty value
	}{
		{sasSpec{table: tbl, perms: "raud"}, []string{"epk"}},
		{sasSpec{table: tbl, perms: "raud"}, []string{"epk", "erk"}},
		{sasSpec{table: tbl, perms: "raud"}, []string{"spk", "srk", "epk", "erk"}},
		{sasSpec{table: tbl, perms: "raud", spk: "m"}, []string{"srk", "epk"}},
		{sasSpec{table: tbl, perms: "raud", epk: "m"}, []string{"erk"}},
	} {
		without := tt.spec.build(t)
		q, _ := url.ParseQuery(without)
		for _, p := range tt.empty {
			q[p] = []string{""}
		}
		with := q.Encode()
		outcome := func(sas string) string {
			c := sasClient(t, s, tbl, sas)
			var b strings.Builder
			for _, pk := range []string{"a", "m", "z"} {
				_, err := c.GetEntity(ctx, pk, "r", nil)
				fmt.Fprintf(&b, "get %s: %s; ", pk, codeOf(err))
			}
			page, err := c.NewListEntitiesPager(nil).NextPage(ctx)
			fmt.Fprintf(&b, "query: %s %d", codeOf(err), len(page.Entities))
			return b.String()
		}
		if got, want := outcome(with), outcome(without); got != want {
			t.Errorf("token with empty %v: %s\nthe same token without them: %s", tt.empty, got, want)
		}
	}
}

// TestSecondaryRefusesWrites: the -secondary endpoint is a read-only
// replica in the service. Every write through it gets 403
// InsufficientAccountPermissions and changes nothing; reads work.
func TestSecondaryRefusesWrites(t *testing.T) {
	s := StartServer(t, "")
	svc := serviceClient(t, s)
	c := newTable(t, svc)
	name := tableNames[c]
	if _, err := c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "r", "V": 1}), nil); err != nil {
		t.Fatal(err)
	}
	cred, _ := aztables.NewSharedKeyCredential(devAccount, devKey)
	sec, err := aztables.NewServiceClientWithSharedKey(s.URL+"/"+devAccount+"-secondary", cred,
		&aztables.ClientOptions{ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	sc := sec.NewClient(name)
	ent := func(rk string) []byte { return mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": rk, "V": 2}) }
	for _, w := range []struct {
		name string
		run  func() error
	}{
		{"CreateTable", func() error { _, err := sec.CreateTable(ctx, "secondarynew", nil); return err }},
		{"DeleteTable", func() error { _, err := sec.DeleteTable(ctx, name, nil); return err }},
		{"Insert", func() error { _, err := sc.AddEntity(ctx, ent("new"), nil); return err }},
		{"Upsert", func() error { _, err := sc.UpsertEntity(ctx, ent("r"), nil); return err }},
		{"Merge", func() error {
			_, err := sc.UpdateEntity(ctx, ent("r"), &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeMerge})
			return err
		}},
		{"Delete", func() error { _, err := sc.DeleteEntity(ctx, "p", "r", nil); return err }},
		{"Batch", func() error {
			_, err := sc.SubmitTransaction(ctx, []aztables.TransactionAction{{ActionType: aztables.TransactionTypeAdd, Entity: ent("b")}}, nil)
			return err
		}},
		{"SetTableACL", func() error { _, err := sc.SetAccessPolicy(ctx, &aztables.SetAccessPolicyOptions{}); return err }},
		{"SetServiceProperties", func() error {
			_, err := sec.SetProperties(ctx, aztables.ServiceProperties{Cors: []*aztables.CorsRule{{AllowedOrigins: to.Ptr("*"), AllowedMethods: to.Ptr("GET"), AllowedHeaders: to.Ptr("*"), ExposedHeaders: to.Ptr("*"), MaxAgeInSeconds: to.Ptr[int32](5)}}}, nil)
			return err
		}},
	} {
		if got := codeOf(w.run()); got != "403 InsufficientAccountPermissions" {
			t.Errorf("%s through -secondary: %s, want 403 InsufficientAccountPermissions", w.name, got)
		}
	}
	// Reads through the secondary still work.
	if _, err := sc.GetEntity(ctx, "p", "r", nil); err != nil {
		t.Errorf("GetEntity through -secondary: %v", err)
	}
	// Nothing changed.
	got, err := c.GetEntity(ctx, "p", "r", nil)
	if err != nil {
		t.Fatal(err)
	}
	var e map[string]any
	json.Unmarshal(got.Value, &e)
	if n := count(t, c); n != 1 || e["V"] != float64(1) {
		t.Errorf("after refused writes: %d entities, V = %v; want 1 entity with V 1", n, e["V"])
	}
	if _, err := svc.NewClient("secondarynew").GetAccessPolicy(ctx, nil); codeOf(err) != "404 TableNotFound" {
		t.Errorf("table created through -secondary: %s", codeOf(err))
	}
	props, err := svc.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(props.Cors) != 0 {
		t.Errorf("service properties changed through -secondary: %d CORS rules", len(props.Cors))
	}
}

// TestLoneSurrogateKeys: keys that differ only in an unpaired surrogate
// must not become one key (U+FFFD): such a body is 400 InvalidInput and
// stores nothing. A proper surrogate pair is stored exactly.
func TestLoneSurrogateKeys(t *testing.T) {
	s := StartServer(t, "")
	c := newTable(t, serviceClient(t, s))
	tbl := "/" + devAccount + "/" + tableNames[c]
	for _, body := range []string{
		`{"PartitionKey":"p","RowKey":"d\ud800"}`,
		`{"PartitionKey":"p","RowKey":"d\udbff"}`,
		`{"PartitionKey":"p\udc00","RowKey":"r"}`,
		`{"PartitionKey":"p","RowKey":"r","S":"x\ud800"}`,
	} {
		if st, h, b := rawDo(t, s, "POST", tbl, body, nil); st != 400 || h.Get("x-ms-error-code") != "InvalidInput" {
			t.Errorf("POST %s: %d %s (%s), want 400 InvalidInput", body, st, h.Get("x-ms-error-code"), b)
		}
	}
	if n := count(t, c); n != 0 {
		t.Fatalf("%d entities stored from bodies with unpaired surrogates", n)
	}
	if st, _, b := rawDo(t, s, "POST", tbl, `{"PartitionKey":"p","RowKey":"d\ud83d\ude00"}`, nil); st != 201 {
		t.Fatalf("insert with a surrogate pair: %d %s", st, b)
	}
	if _, err := c.GetEntity(ctx, "p", "d\U0001F600", nil); err != nil {
		t.Errorf("surrogate pair key not stored exactly: %v", err)
	}
}

// duplicateMember returns the first member name that appears twice in one
// JSON object of body, or "".
func duplicateMember(t *testing.T, body string) string {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(body))
	type obj struct {
		seen   map[string]bool
		expect bool // the next token is a member name
	}
	var stack []*obj
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return ""
		}
		if err != nil {
			t.Fatalf("not JSON: %v\n%s", err, body)
		}
		var top *obj
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if name, ok := tok.(string); ok && top != nil && top.expect {
			if top.seen[name] {
				return name
			}
			top.seen[name] = true
			top.expect = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &obj{seen: map[string]bool{}, expect: true})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		case json.Delim('['):
			stack = append(stack, &obj{})
			continue
		}
		// A value ended: in an object the next token is a name.
		if len(stack) > 0 && stack[len(stack)-1].seen != nil {
			stack[len(stack)-1].expect = true
		}
	}
}

// TestSelectRepeatedProperty: $select naming a property several times
// returns it once, in every metadata level, for Get Entity and queries.
func TestSelectRepeatedProperty(t *testing.T) {
	s := StartServer(t, "")
	c := newTable(t, serviceClient(t, s))
	tbl := "/" + devAccount + "/" + tableNames[c]
	if _, err := c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "r", "v": 1, "w": "x", "L@odata.type": "Edm.Int64", "L": "5"}), nil); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		// Annotation and metadata names are not properties: no null
		// beside (or instead of) the real member of that name.
		tbl + "()?$select=L,L@odata.type,odata.etag",
		tbl + "(PartitionKey='p',RowKey='r')?$select=L,L@odata.type,odata.etag,odata.metadata",
		tbl + "()?$select=L,odata.metadata,odata.type,odata.id,odata.editLink,odata.etag&$format=" + url.QueryEscape("application/json;odata=fullmetadata"),
		tbl + "(PartitionKey='p',RowKey='r')?$select=v,v,v",
		tbl + "()?$select=v,w,v,RowKey,RowKey",
		tbl + "()?$select=v,v&$format=" + url.QueryEscape("application/json;odata=fullmetadata"),
		tbl + "()?$select=PartitionKey,PartitionKey,missing,missing&$format=" + url.QueryEscape("application/json;odata=nometadata"),
	} {
		st, _, body := rawDo(t, s, "GET", path, "", nil)
		if st != 200 {
			t.Fatalf("GET %s: %d %s", path, st, body)
		}
		if d := duplicateMember(t, body); d != "" {
			t.Errorf("GET %s: member %q repeated in %s", path, d, body)
		}
	}
}

// TestSetTableACLUnknownElements: a Set Table ACL body with elements the
// schema does not have is 400 InvalidXmlDocument and leaves the table's
// policies as they were.
func TestSetTableACLUnknownElements(t *testing.T) {
	s := StartServer(t, "")
	c := newTable(t, serviceClient(t, s))
	if _, err := c.SetAccessPolicy(ctx, &aztables.SetAccessPolicyOptions{TableACL: []*aztables.SignedIdentifier{{
		ID: to.Ptr("keep"), AccessPolicy: &aztables.AccessPolicy{Permission: to.Ptr("r")},
	}}}); err != nil {
		t.Fatal(err)
	}
	path := "/" + devAccount + "/" + tableNames[c] + "?comp=acl"
	for _, body := range []string{
		`<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers><Wrapper><SignedIdentifier><Id>new</Id></SignedIdentifier></Wrapper></SignedIdentifiers>`,
		`<SignedIdentifiers><SignedIdentifier><Id>new</Id><AccessPolicy><Nested><Permission>r</Permission></Nested></AccessPolicy></SignedIdentifier></SignedIdentifiers>`,
		`<SignedIdentifiers><Unknown/></SignedIdentifiers>`,
	} {
		st, h, b := rawDo(t, s, "PUT", path, body, map[string]string{"Content-Type": "application/xml"})
		if st != 400 || h.Get("x-ms-error-code") != "InvalidXmlDocument" {
			t.Errorf("Set Table ACL %s: %d %s (%s), want 400 InvalidXmlDocument", body, st, h.Get("x-ms-error-code"), b)
		}
	}
	acl, err := c.GetAccessPolicy(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(acl.SignedIdentifiers) != 1 || *acl.SignedIdentifiers[0].ID != "keep" {
		t.Errorf("policies after refused sets: %d, want the one named keep", len(acl.SignedIdentifiers))
	}
}

// TestErrorBodyInvalidUTF8: an error message that quotes request bytes
// which are not UTF-8 (an If-Match header here) still comes back as valid
// UTF-8 JSON.
func TestErrorBodyInvalidUTF8(t *testing.T) {
	s := StartServer(t, "")
	c := newTable(t, serviceClient(t, s))
	path := "/" + devAccount + "/" + tableNames[c] + "(PartitionKey='p',RowKey='r')"
	st, h, body := rawDo(t, s, "PUT", path, `{"A":1}`, map[string]string{"If-Match": "\xff\xfe"})
	if st != 400 || h.Get("x-ms-error-code") != "InvalidInput" {
		t.Fatalf("malformed If-Match: %d %s, want 400 InvalidInput", st, h.Get("x-ms-error-code"))
	}
	if !utf8.ValidString(body) || !json.Valid([]byte(body)) {
		t.Errorf("error body is not valid UTF-8 JSON: %q", body)
	}
	// A key in the URL that is not UTF-8 is out of range, and the message
	// that quotes it is UTF-8.
	bad := "/" + devAccount + "/" + tableNames[c] + "(PartitionKey='%FF%FE',RowKey='r')"
	st, h, body = rawDo(t, s, "PUT", bad, `{"A":1}`, nil)
	if st != 400 || h.Get("x-ms-error-code") != "OutOfRangeInput" {
		t.Fatalf("PUT with a non-UTF-8 key: %d %s, want 400 OutOfRangeInput", st, h.Get("x-ms-error-code"))
	}
	if !utf8.ValidString(body) || !json.Valid([]byte(body)) {
		t.Errorf("error body is not valid UTF-8 JSON: %q", body)
	}
	// $select names are echoed (as members, and in odata.metadata): the
	// response stays UTF-8 whatever bytes they decode to.
	if _, err := c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "r"}), nil); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		"/" + devAccount + "/" + tableNames[c] + "()?$select=%FF%FE",
		"/" + devAccount + "/" + tableNames[c] + "(PartitionKey='p',RowKey='r')?$select=RowKey,%FF",
	} {
		st, _, body = rawDo(t, s, "GET", path, "", nil)
		if st != 200 || !utf8.ValidString(body) || !json.Valid([]byte(body)) {
			t.Errorf("GET %s: %d, body not valid UTF-8 JSON: %q", path, st, body)
		}
	}
}

// TestQuerySemicolon: a ';' in the query string is part of a value, as the
// service reads it ($format as its documentation writes it), not an error.
func TestQuerySemicolon(t *testing.T) {
	s := StartServer(t, "")
	c := newTable(t, serviceClient(t, s))
	tbl := "/" + devAccount + "/" + tableNames[c]
	st, _, body := rawDo(t, s, "POST", tbl+"?$format=application/json;odata=nometadata", `{"PartitionKey":"p","RowKey":"a;b","S":"x;y"}`, nil)
	if st != 201 || strings.Contains(body, "odata.") {
		t.Fatalf("insert with $format=application/json;odata=nometadata: %d %s", st, body)
	}
	st, _, body = rawDo(t, s, "GET", tbl+"()?$filter=S%20eq%20'x;y'&$format=application/json;odata=nometadata", "", nil)
	if st != 200 || !strings.Contains(body, `"RowKey":"a;b"`) || strings.Contains(body, "odata.") {
		t.Errorf("query with ';' in $filter and $format: %d %s", st, body)
	}
}

// rss returns the resident set size of a process in bytes (Linux).
func rss(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read RSS: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// TestMemoryFlatUnderMissingTables: a stream of requests for missing
// tables, each under a new 20 KB name, leaves the server's memory where it
// was. Every map keyed by client input is bounded; a name is not kept
// after its request. (The names alone total 200 MB: kept, they would show.)
func TestMemoryFlatUnderMissingTables(t *testing.T) {
	s := StartServer(t, "")
	pid := s.cmd.Process.Pid
	long := strings.Repeat("x", 20<<10)
	send := func(from, n int) {
		const workers = 4
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := from + w; i < from+n; i += workers {
					path := fmt.Sprintf("/%s/t%d%s()", devAccount, i, long)
					if st, h, _ := rawDo(t, s, "GET", path, "", nil); st != 404 || h.Get("x-ms-error-code") != "TableNotFound" {
						t.Errorf("GET missing table %d: %d %s, want 404 TableNotFound", i, st, h.Get("x-ms-error-code"))
						return
					}
				}
			}(w)
		}
		wg.Wait()
	}
	send(0, 1000) // warm up: buffers, pools and the GC's target settle
	before := rss(t, pid)
	send(1000, 10000)
	after := rss(t, pid)
	t.Logf("RSS %d MiB before, %d MiB after 10000 requests for missing tables", before>>20, after>>20)
	if grew := after - before; grew > 80<<20 {
		t.Errorf("RSS grew by %d MiB over 10000 requests for missing 20 KB table names, want under 80 MiB", grew>>20)
	}
	// The server still works.
	c := newTable(t, serviceClient(t, s))
	if _, err := c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "r"}), nil); err != nil {
		t.Fatal(err)
	}
}

// TestMemoryBoundedUnderSlowHeaders: connections that send many small
// header lines and never finish their headers hold no more than a bounded
// amount of the server's memory. net/http builds the header map as the
// lines arrive: ~530 KiB for 64 KiB of them, so 2,000 such connections
// took ~1 GB before the listener bounded the bytes of incomplete requests.
// A whole request is served during it.
func TestMemoryBoundedUnderSlowHeaders(t *testing.T) {
	s := StartServer(t, "")
	pid := s.cmd.Process.Pid
	addr := strings.TrimPrefix(s.URL, "http://")
	var lines strings.Builder
	lines.WriteString("GET /" + devAccount + "/Tables HTTP/1.1\r\nHost: 127.0.0.1\r\n")
	for i := 0; lines.Len() < 60<<10; i++ {
		fmt.Fprintf(&lines, "h%d: v\r\n", i)
	}
	head := lines.String()
	before := rss(t, pid)

	conns := 2000
	var own syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &own); err != nil {
		t.Fatal(err)
	}
	conns = min(conns, int(own.Cur)-256) // this process's files
	const workers = 8
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		held []net.Conn
	)
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < conns/workers; i++ {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Errorf("dial: %v", err)
					return
				}
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
				c.SetWriteDeadline(time.Now().Add(10 * time.Second))
				io.WriteString(c, head) // fails once the server has shed it
			}
		}()
	}
	wg.Wait()
	// The server reads what was sent; its memory is measured over a few
	// seconds after.
	var peak int64
	for i := 0; i < 10; i++ {
		time.Sleep(300 * time.Millisecond)
		peak = max(peak, rss(t, pid))
	}
	t.Logf("RSS %d MiB before, at most %d MiB with %d connections sending 60 KiB of header lines each", before>>20, peak>>20, conns)
	if grew := peak - before; grew > 300<<20 {
		t.Errorf("RSS grew by %d MiB under %d connections of unfinished headers, want under 300 MiB", grew>>20, conns)
	}
	c := newTable(t, serviceClient(t, s))
	if _, err := c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "r"}), nil); err != nil {
		t.Fatalf("a whole request during the slow ones: %v", err)
	}
}

// TestLongKeysThatDoNotCompress: keys of 512 UTF-16 units each (the most
// partita accepts) of random CJK characters take 3 KB in UTF-8 and do not
// compress. The embedded engine stores and returns them; PostgreSQL's
// btree cannot index them (~2,700 bytes a row), and the request gets 400
// PropertyValueTooLarge, alone or in a batch, with nothing written. It got
// 500 InternalError, which the SDKs retry.
func TestLongKeysThatDoNotCompress(t *testing.T) {
	s := StartServer(t, "")
	c := newTable(t, serviceClient(t, s))
	rng := rand.New(rand.NewPCG(1, 2))
	cjk := func() string {
		r := make([]rune, 512)
		for i := range r {
			r[i] = rune(0x4E00 + rng.IntN(0x9FFF-0x4E00))
		}
		return string(r)
	}
	pk, rk := cjk(), cjk()
	e := mustJSON(t, map[string]any{"PartitionKey": pk, "RowKey": rk, "v": 1})
	_, err := c.AddEntity(ctx, e, nil)
	batchPK := cjk()
	_, berr := c.SubmitTransaction(ctx, []aztables.TransactionAction{
		{ActionType: aztables.TransactionTypeAdd, Entity: mustJSON(t, map[string]any{"PartitionKey": batchPK, "RowKey": "short"})},
		{ActionType: aztables.TransactionTypeAdd, Entity: mustJSON(t, map[string]any{"PartitionKey": batchPK, "RowKey": cjk()})},
	}, nil)
	if E2EStore == "postgres" {
		if codeOf(err) != "400 PropertyValueTooLarge" {
			t.Errorf("insert of keys past PostgreSQL's index limit: %s, want 400 PropertyValueTooLarge", codeOf(err))
		}
		// A changeset response naming the operation (the commit refuses
		// the key without saying which: the one with the longest keys is
		// named), as for every refused operation of a batch; it was a
		// bare 400 before.
		if codeOf(berr) != "202 PropertyValueTooLarge" {
			t.Errorf("batch with keys past PostgreSQL's index limit: %s, want 202 PropertyValueTooLarge (a changeset response)", codeOf(berr))
		}
		if _, err := c.GetEntity(ctx, batchPK, "short", nil); codeOf(err) != "404 ResourceNotFound" {
			t.Errorf("the batch's other entity: %s, want 404 ResourceNotFound (nothing written)", codeOf(err))
		}
		return
	}
	if err != nil {
		t.Fatalf("insert of 512-unit CJK keys: %v", err)
	}
	if berr != nil {
		t.Fatalf("batch with 512-unit CJK keys: %v", berr)
	}
	got, err := c.GetEntity(ctx, pk, rk, nil)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(got.Value, &m); err != nil || m["PartitionKey"] != pk || m["RowKey"] != rk {
		t.Errorf("read back: keys differ (%v)", err)
	}
}
