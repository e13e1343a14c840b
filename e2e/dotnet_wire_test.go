package e2e

// The .NET SDK (Azure.Data.Tables 12.x) cannot run on any machine this
// project has, so these tests send, byte for byte, the requests it builds
// (from its public source; see docs/COMPATIBILITY.md, ".NET") and check
// partita's answers: the headers and query parameters only .NET sends, the
// way it writes entity values and $filter literals, its key escaping, its
// $batch layout, and its SAS tokens.

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// dotnetFormat is the $format every .NET entity and table operation adds,
// escaped as Uri.EscapeDataString escapes it.
const dotnetFormat = "$format=application%2Fjson%3Bodata%3Dminimalmetadata"

// dotnetEscape is .NET's Uri.EscapeDataString: every byte outside the RFC
// 3986 unreserved set is percent-encoded, so ' ( ) / and spaces are too.
func dotnetEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// dotnetKeyPath is the path of an entity as TableRestClient builds it: the
// quotes of each key doubled (12.8 and later), then escaped.
func dotnetKeyPath(table, pk, rk string) string {
	return "/" + dotnetEscape(table) + "(PartitionKey='" + dotnetEscape(strings.ReplaceAll(pk, "'", "''")) +
		"',RowKey='" + dotnetEscape(strings.ReplaceAll(rk, "'", "''")) + "')"
}

func dotnetGUID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

type dotnetClient struct {
	t    *testing.T
	base string // http://127.0.0.1:PORT/devstoreaccount1
}

// do sends one request the way the .NET pipeline does: the operation's own
// headers (hdr, in the order the generated code adds them), then Azure.Core's
// x-ms-client-request-id, x-ms-return-client-request-id and User-Agent, then
// TableSharedKeyPipelinePolicy's x-ms-date and SharedKeyLite signature over
// "/" + account + Uri.AbsolutePath (plus ?comp=). A sas, when given, replaces
// the signature and is appended to the query.
func (c dotnetClient) do(method, pathAndQuery string, hdr [][2]string, body []byte, sas string) (*http.Response, []byte) {
	c.t.Helper()
	u := c.base + pathAndQuery
	if sas != "" {
		if strings.Contains(u, "?") {
			u += "&" + sas
		} else {
			u += "?" + sas
		}
	}
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	wantPath := strings.SplitN(strings.TrimPrefix(u, "http://"+req.URL.Host), "?", 2)[0]
	if req.URL.EscapedPath() != wantPath {
		c.t.Fatalf("Go would send the path %q, not .NET's %q", req.URL.EscapedPath(), wantPath)
	}
	for _, h := range hdr {
		req.Header.Set(h[0], h[1])
	}
	req.Header.Set("x-ms-client-request-id", dotnetGUID())
	req.Header.Set("x-ms-return-client-request-id", "true")
	req.Header.Set("User-Agent", "azsdk-net-Data.Tables/12.11.0 (.NET 8.0.11; Ubuntu 24.04.1 LTS)")
	if sas == "" {
		date := time.Now().UTC().Format(http.TimeFormat)
		req.Header.Set("x-ms-date", date)
		res := "/" + devAccount + wantPath
		if comp := req.URL.Query().Get("comp"); comp != "" {
			res += "?comp=" + comp
		}
		key, _ := base64.StdEncoding.DecodeString(devKey)
		m := hmac.New(sha256.New, key)
		m.Write([]byte(date + "\n" + res))
		req.Header.Set("Authorization", "SharedKeyLite "+devAccount+":"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp, b
}

// Headers of the generated TableRestClient methods, in its order.
var (
	dotnetQueryHdr  = [][2]string{{"x-ms-version", "2019-02-02"}, {"DataServiceVersion", "3.0"}, {"Accept", "application/json;odata=minimalmetadata"}}
	dotnetInsertHdr = [][2]string{{"x-ms-version", "2019-02-02"}, {"DataServiceVersion", "3.0"}, {"Prefer", "return-no-content"},
		{"Accept", "application/json;odata=minimalmetadata"}, {"Content-Type", "application/json;odata=nometadata"}}
	dotnetCreateTableHdr = [][2]string{{"x-ms-version", "2019-02-02"}, {"DataServiceVersion", "3.0"},
		{"Accept", "application/json;odata=minimalmetadata"}, {"Content-Type", "application/json;odata=nometadata"}}
)

// dotnetUpdateHdr is the header list of UpdateEntity (PUT) and MergeEntity
// (PATCH); ifMatch "" leaves If-Match out (an upsert).
func dotnetUpdateHdr(ifMatch string) [][2]string {
	h := [][2]string{{"x-ms-version", "2019-02-02"}, {"DataServiceVersion", "3.0"}}
	if ifMatch != "" {
		h = append(h, [2]string{"If-Match", ifMatch})
	}
	return append(h, [2]string{"Accept", "application/json"}, [2]string{"Content-Type", "application/json"})
}

func dotnetDeleteHdr(ifMatch string) [][2]string {
	return [][2]string{{"x-ms-version", "2019-02-02"}, {"DataServiceVersion", "3.0"}, {"If-Match", ifMatch}, {"Accept", "application/json;odata=minimalmetadata"}}
}

func wantStatus(t *testing.T, what string, resp *http.Response, body []byte, status int) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("%s: status %d (%s), want %d; body: %s", what, resp.StatusCode, resp.Header.Get("x-ms-error-code"), status, body)
	}
}

// dotnetEntity is the body .NET writes for an entity with these values:
// System.Text.Json output of ToOdataAnnotatedDictionary, where each type
// annotation follows its value, doubles are written in their shortest form
// (1.0 as 1, 1e20 as 1E+20, NaN as a string) and annotated Edm.Double, longs
// as annotated strings, DateTime with seven fraction digits and Z.
func dotnetEntity(pk, rk string) string {
	return `{"PartitionKey":` + jsonStr(pk) + `,"RowKey":` + jsonStr(rk) +
		`,"Name":"O'Brien","Count":7,"Flag":true` +
		`,"Whole":1,"Whole@odata.type":"Edm.Double"` +
		`,"Amount":1.5,"Amount@odata.type":"Edm.Double"` +
		`,"Huge":1E+20,"Huge@odata.type":"Edm.Double"` +
		`,"Nan":"NaN","Nan@odata.type":"Edm.Double"` +
		`,"Big":"12345678901234","Big@odata.type":"Edm.Int64"` +
		`,"When":"2020-01-02T03:04:05.1234567Z","When@odata.type":"Edm.DateTime"` +
		`,"Day":"2021-05-06T07:08:09.0000000Z","Day@odata.type":"Edm.DateTime"` +
		`,"Id":"0f8fad5b-d9cb-469f-a165-70867728950e","Id@odata.type":"Edm.Guid"` +
		`,"Bin":"Cgv/","Bin@odata.type":"Edm.Binary"}`
}

func jsonStr(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestDotNetWire(t *testing.T) {
	s := StartServer(t, "")
	c := dotnetClient{t: t, base: s.Endpoint()}
	const table = "dotnetwire"

	t.Run("CreateTable", func(t *testing.T) {
		c := dotnetClient{t: t, base: c.base}
		resp, body := c.do("POST", "/Tables?"+dotnetFormat, dotnetCreateTableHdr, []byte(`{"TableName":"`+table+`"}`), "")
		wantStatus(t, "create table", resp, body, 201)
		var got map[string]any
		if err := json.Unmarshal(body, &got); err != nil || got["TableName"] != table {
			t.Fatalf("create table body %s (%v): want TableName %q", body, err, table)
		}
		if id := resp.Header.Get("x-ms-client-request-id"); id == "" {
			t.Errorf("x-ms-client-request-id not echoed")
		}
		// CreateIfNotExists relies on 409 TableAlreadyExists.
		resp, body = c.do("POST", "/Tables?"+dotnetFormat, dotnetCreateTableHdr, []byte(`{"TableName":"`+table+`"}`), "")
		wantStatus(t, "create again", resp, body, 409)
		if code := resp.Header.Get("x-ms-error-code"); code != "TableAlreadyExists" {
			t.Fatalf("create again: code %q, want TableAlreadyExists", code)
		}
		resp, body = c.do("GET", "/Tables?"+dotnetFormat+"&$filter="+dotnetEscape("TableName eq '"+table+"'"), dotnetQueryHdr, nil, "")
		wantStatus(t, "query tables", resp, body, 200)
		if !strings.Contains(string(body), `"TableName":"`+table+`"`) {
			t.Fatalf("query tables: %s", body)
		}
	})

	// The entity every later subtest reads; its keys need .NET's escaping.
	pk, rk := "O'Brien & co+x", "r 1(a)"
	t.Run("InsertAnnotatedAfterValue", func(t *testing.T) {
		c := dotnetClient{t: t, base: c.base}
		resp, body := c.do("POST", "/"+table+"?"+dotnetFormat, dotnetInsertHdr, []byte(dotnetEntity(pk, rk)), "")
		wantStatus(t, "insert", resp, body, 204)
		if resp.Header.Get("Preference-Applied") != "return-no-content" || resp.Header.Get("ETag") == "" {
			t.Fatalf("insert: Preference-Applied %q, ETag %q", resp.Header.Get("Preference-Applied"), resp.Header.Get("ETag"))
		}
		resp, body = c.do("GET", dotnetKeyPath(table, pk, rk)+"?"+dotnetFormat, dotnetQueryHdr, nil, "")
		wantStatus(t, "get", resp, body, 200)
		var e map[string]any
		if err := json.Unmarshal(body, &e); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"PartitionKey": pk, "RowKey": rk, "Name": "O'Brien", "Count": 7.0, "Flag": true,
			"Whole": 1.0, "Amount": 1.5, "Huge": 1e20, "Nan": "NaN", "Nan@odata.type": "Edm.Double",
			"Big": "12345678901234", "Big@odata.type": "Edm.Int64",
			"When": "2020-01-02T03:04:05.1234567Z", "When@odata.type": "Edm.DateTime",
			"Day": "2021-05-06T07:08:09Z", "Day@odata.type": "Edm.DateTime",
			"Id": "0f8fad5b-d9cb-469f-a165-70867728950e", "Id@odata.type": "Edm.Guid",
			"Bin": "Cgv/", "Bin@odata.type": "Edm.Binary",
		}
		for k, v := range want {
			if e[k] != v {
				t.Errorf("%s = %#v, want %#v", k, e[k], v)
			}
		}
		// .NET reads an unannotated number with a fraction as a double and
		// one without as an int: a stored Double must come back as 1.0.
		if !bytes.Contains(body, []byte(`"Whole":1.0`)) {
			t.Errorf("the Double 1 is not written as 1.0: %s", body)
		}
		if _, ok := e["Count@odata.type"]; ok {
			t.Errorf("Int32 annotated: %s", body)
		}
		if e["odata.etag"] != resp.Header.Get("ETag") {
			t.Errorf("odata.etag %v, ETag header %q", e["odata.etag"], resp.Header.Get("ETag"))
		}
	})

	t.Run("UndoubledQuoteInKey", func(t *testing.T) {
		c := dotnetClient{t: t, base: c.base}
		// Releases before the quote-doubling fix (and the compatibility
		// switches that restore it) send a key's quote once; the service
		// refuses that with 400 InvalidInput, and so must partita.
		p := "/" + table + "(PartitionKey='" + dotnetEscape(pk) + "',RowKey='" + dotnetEscape(rk) + "')?" + dotnetFormat
		resp, body := c.do("GET", p, dotnetQueryHdr, nil, "")
		wantStatus(t, "get with an undoubled quote", resp, body, 400)
		if code := resp.Header.Get("x-ms-error-code"); code != "InvalidInput" {
			t.Fatalf("undoubled quote: code %q, want InvalidInput", code)
		}
	})

	t.Run("FilterLiterals", func(t *testing.T) {
		c := dotnetClient{t: t, base: c.base}
		// TableOdataFilter.Create's literal forms: long with L, DateTime via
		// XmlConvert (fraction trimmed, none when zero), lowercase guid'',
		// uppercase X'' hex, a double without ".0", doubled quotes.
		for _, f := range []string{
			"Big eq 12345678901234L",
			"When eq datetime'2020-01-02T03:04:05.1234567Z'",
			"Day eq datetime'2021-05-06T07:08:09Z'",
			"Id eq guid'0f8fad5b-d9cb-469f-a165-70867728950e'",
			"Bin eq X'0A0BFF'",
			"Whole eq 1",
			"Amount ge 1.5 and Huge gt 1E+19",
			"Flag eq true and Count eq 7",
			"Name eq 'O''Brien'",
			"PartitionKey eq 'O''Brien & co+x' and RowKey eq 'r 1(a)'",
		} {
			q := "/" + table + "()?" + dotnetFormat + "&$top=5&$select=" + dotnetEscape("PartitionKey,RowKey,Name") + "&$filter=" + dotnetEscape(f)
			resp, body := c.do("GET", q, dotnetQueryHdr, nil, "")
			wantStatus(t, f, resp, body, 200)
			var page struct{ Value []map[string]any }
			if err := json.Unmarshal(body, &page); err != nil {
				t.Fatal(err)
			}
			if len(page.Value) != 1 || page.Value[0]["RowKey"] != rk || page.Value[0]["Name"] != "O'Brien" {
				t.Errorf("%s: got %s, want the one entity", f, body)
			}
		}
	})

	t.Run("UpdateMergeDelete", func(t *testing.T) {
		c := dotnetClient{t: t, base: c.base}
		p := dotnetKeyPath(table, "p", "u")
		resp, body := c.do("POST", "/"+table+"?"+dotnetFormat, dotnetInsertHdr, []byte(`{"PartitionKey":"p","RowKey":"u","A":1,"B":"b"}`), "")
		wantStatus(t, "insert", resp, body, 204)
		etag := resp.Header.Get("ETag")
		// UpdateEntity(Replace) with the ETag: PUT, Accept application/json.
		resp, body = c.do("PUT", p+"?"+dotnetFormat, dotnetUpdateHdr(etag), []byte(`{"PartitionKey":"p","RowKey":"u","A":2}`), "")
		wantStatus(t, "replace", resp, body, 204)
		// The old ETag now fails, as .NET's optimistic concurrency expects.
		resp, body = c.do("PATCH", p+"?"+dotnetFormat, dotnetUpdateHdr(etag), []byte(`{"PartitionKey":"p","RowKey":"u","C":3}`), "")
		wantStatus(t, "merge with a stale ETag", resp, body, 412)
		if code := resp.Header.Get("x-ms-error-code"); code != "UpdateConditionNotSatisfied" {
			t.Fatalf("stale merge: %q", code)
		}
		// UpsertEntity(Merge): PATCH without If-Match, on an existing and a new entity.
		resp, body = c.do("PATCH", p+"?"+dotnetFormat, dotnetUpdateHdr(""), []byte(`{"PartitionKey":"p","RowKey":"u","C":3}`), "")
		wantStatus(t, "upsert merge", resp, body, 204)
		resp, body = c.do("PATCH", dotnetKeyPath(table, "p", "new")+"?"+dotnetFormat, dotnetUpdateHdr(""), []byte(`{"PartitionKey":"p","RowKey":"new","C":4}`), "")
		wantStatus(t, "upsert merge of a new entity", resp, body, 204)
		resp, body = c.do("GET", p+"?"+dotnetFormat+"&$select="+dotnetEscape("A,B,C"), dotnetQueryHdr, nil, "")
		wantStatus(t, "get", resp, body, 200)
		var e map[string]any
		json.Unmarshal(body, &e)
		if e["A"] != 2.0 || e["C"] != 3.0 || e["B"] != nil {
			t.Fatalf("after replace and merge: %s", body)
		}
		// DeleteEntity with a stale ETag, then with ETag.All.
		resp, body = c.do("DELETE", p+"?"+dotnetFormat, dotnetDeleteHdr(etag), nil, "")
		wantStatus(t, "delete with a stale ETag", resp, body, 412)
		resp, body = c.do("DELETE", p+"?"+dotnetFormat, dotnetDeleteHdr("*"), nil, "")
		wantStatus(t, "delete", resp, body, 204)
		resp, body = c.do("DELETE", p+"?"+dotnetFormat, dotnetDeleteHdr("*"), nil, "")
		wantStatus(t, "delete again", resp, body, 404)
	})

	t.Run("Batch", func(t *testing.T) {
		c := dotnetClient{t: t, base: c.base}
		resp, body := c.do("POST", "/"+table+"?"+dotnetFormat, dotnetInsertHdr, []byte(`{"PartitionKey":"b","RowKey":"m","V":1}`), "")
		wantStatus(t, "seed", resp, body, 204)
		resp, body = c.do("POST", "/"+table+"?"+dotnetFormat, dotnetInsertHdr, []byte(`{"PartitionKey":"b","RowKey":"d","V":1}`), "")
		wantStatus(t, "seed", resp, body, 204)

		ok := dotnetBatch(c.base, table, []dotnetSub{
			{"POST", "/" + table, dotnetInsertHdr, `{"PartitionKey":"b","RowKey":"a","D":1,"D@odata.type":"Edm.Double"}`},
			{"PATCH", dotnetKeyPath(table, "b", "m"), dotnetUpdateHdr("*"), `{"PartitionKey":"b","RowKey":"m","V":2}`},
			{"PUT", dotnetKeyPath(table, "b", "r"), dotnetUpdateHdr(""), `{"PartitionKey":"b","RowKey":"r","V":3}`},
			{"DELETE", dotnetKeyPath(table, "b", "d"), dotnetDeleteHdr("*"), ""},
		})
		resp, body = c.do("POST", "/$batch", ok.hdr, ok.body, "")
		wantStatus(t, "batch", resp, body, 202)
		parts := batchParts(t, resp, body)
		if len(parts) != 4 {
			t.Fatalf("batch: %d sub-responses, want 4:\n%s", len(parts), body)
		}
		for i, p := range parts {
			if !strings.HasPrefix(p, "HTTP/1.1 204") {
				t.Errorf("sub-response %d: %q", i, p)
			}
		}
		resp, body = c.do("GET", "/"+table+"()?"+dotnetFormat+"&$filter="+dotnetEscape("PartitionKey eq 'b'"), dotnetQueryHdr, nil, "")
		wantStatus(t, "query", resp, body, 200)
		var page struct{ Value []map[string]any }
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		got := map[any]map[string]any{}
		for _, e := range page.Value {
			got[e["RowKey"]] = e
		}
		if len(got) != 3 || got["a"]["D"] != 1.0 || got["m"]["V"] != 2.0 || got["r"]["V"] != 3.0 {
			t.Errorf("after the batch (a added, m merged, r upserted, d deleted): %s", body)
		}
		if !strings.Contains(string(body), `"D":1.0`) {
			t.Errorf("the Double 1 is not written as 1.0: %s", body)
		}

		// A failing batch: .NET finds the failed operation's index with the
		// regular expression "value":"(\d+): on the raw sub-response body, so
		// the error JSON must be compact and prefixed.
		bad := dotnetBatch(c.base, table, []dotnetSub{
			{"POST", "/" + table, dotnetInsertHdr, `{"PartitionKey":"b","RowKey":"z"}`},
			{"POST", "/" + table, dotnetInsertHdr, `{"PartitionKey":"b","RowKey":"a"}`},
		})
		resp, body = c.do("POST", "/$batch", bad.hdr, bad.body, "")
		wantStatus(t, "failing batch", resp, body, 202)
		parts = batchParts(t, resp, body)
		if len(parts) != 1 || !strings.HasPrefix(parts[0], "HTTP/1.1 409") {
			t.Fatalf("failing batch: want one 409 sub-response, got %q", parts)
		}
		if m := regexp.MustCompile(`"value":"(\d+):`).FindStringSubmatch(parts[0]); m == nil || m[1] != "1" {
			t.Fatalf(".NET's index pattern does not find index 1 in %q", parts[0])
		}
		resp, body = c.do("GET", dotnetKeyPath(table, "b", "z")+"?"+dotnetFormat, dotnetQueryHdr, nil, "")
		wantStatus(t, "z after the failed batch", resp, body, 404)
	})

	t.Run("SASFromTableSasBuilder", func(t *testing.T) {
		c := dotnetClient{t: t, base: c.base}
		// TableSasBuilder: sv 2019-07-07, times without fractions, the key
		// range in the query string, permissions in "raud" order.
		st := time.Now().UTC().Add(-5 * time.Minute).Format("2006-01-02T15:04:05Z")
		se := time.Now().UTC().Add(time.Hour).Format("2006-01-02T15:04:05Z")
		toSign := strings.Join([]string{"ra", st, se, "/table/" + devAccount + "/" + table, "", "", "https,http", "2019-07-07", "b", "", "b", ""}, "\n")
		key, _ := base64.StdEncoding.DecodeString(devKey)
		m := hmac.New(sha256.New, key)
		m.Write([]byte(toSign))
		sas := "sv=2019-07-07&tn=" + table + "&spk=b&epk=b&spr=" + url.QueryEscape("https,http") + "&st=" + url.QueryEscape(st) +
			"&se=" + url.QueryEscape(se) + "&sp=ra&sig=" + url.QueryEscape(base64.StdEncoding.EncodeToString(m.Sum(nil)))
		resp, body := c.do("GET", "/"+table+"()?"+dotnetFormat, dotnetQueryHdr, nil, sas)
		wantStatus(t, "query with the SAS", resp, body, 200)
		var page struct{ Value []map[string]any }
		json.Unmarshal(body, &page)
		if len(page.Value) == 0 {
			t.Fatalf("the SAS query returned nothing: %s", body)
		}
		for _, e := range page.Value {
			if e["PartitionKey"] != "b" {
				t.Errorf("the SAS for partition b returned %v", e["PartitionKey"])
			}
		}
		resp, body = c.do("POST", "/"+table+"?"+dotnetFormat, dotnetInsertHdr, []byte(`{"PartitionKey":"c","RowKey":"x"}`), sas)
		wantStatus(t, "insert outside the SAS range", resp, body, 403)
		resp, body = c.do("POST", "/"+table+"?"+dotnetFormat, dotnetInsertHdr, []byte(`{"PartitionKey":"b","RowKey":"sas"}`), sas)
		wantStatus(t, "insert inside the SAS range", resp, body, 204)
	})

	t.Run("DeleteTable", func(t *testing.T) {
		c := dotnetClient{t: t, base: c.base}
		// Only x-ms-version and Accept: no DataServiceVersion.
		hdr := [][2]string{{"x-ms-version", "2019-02-02"}, {"Accept", "application/json"}}
		resp, body := c.do("DELETE", "/Tables('"+table+"')", hdr, nil, "")
		wantStatus(t, "delete table", resp, body, 204)
	})
}

type dotnetSub struct {
	method, path string
	hdr          [][2]string
	body         string
}

type dotnetBatchReq struct {
	hdr  [][2]string
	body []byte
}

// dotnetBatch lays out a changeset as Azure.Core's MultipartContent and
// RequestRequestContent write it: CRLF lines; the changeset's
// Content-Type as the batch part's only header; each sub-request with
// Content-Type and Content-Transfer-Encoding, an absolute URL with $format,
// a Host header without the port, the generated headers and no
// Content-Length; a CRLF before every boundary after the first. The outer
// request carries only x-ms-version, DataServiceVersion and Content-Type
// (no Accept).
func dotnetBatch(base, table string, subs []dotnetSub) dotnetBatchReq {
	batch, cs := "batch_"+dotnetGUID(), "changeset_"+dotnetGUID()
	u, _ := url.Parse(base)
	var b strings.Builder
	b.WriteString("--" + batch + "\r\n")
	b.WriteString("Content-Type: multipart/mixed; boundary=" + cs + "\r\n\r\n")
	b.WriteString("--" + cs + "\r\n")
	for i, s := range subs {
		if i > 0 {
			b.WriteString("\r\n--" + cs + "\r\n")
		}
		b.WriteString("Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n")
		b.WriteString(s.method + " " + base + s.path + "?" + dotnetFormat + " HTTP/1.1\r\n")
		b.WriteString("Host: " + u.Hostname() + "\r\n")
		for _, h := range s.hdr {
			b.WriteString(h[0] + ": " + h[1] + "\r\n")
		}
		b.WriteString("\r\n" + s.body)
	}
	b.WriteString("\r\n--" + cs + "--\r\n")
	b.WriteString("\r\n--" + batch + "--\r\n")
	return dotnetBatchReq{
		hdr:  [][2]string{{"x-ms-version", "2019-02-02"}, {"DataServiceVersion", "3.0"}, {"Content-Type", "multipart/mixed; boundary=" + batch}},
		body: []byte(b.String()),
	}
}

// batchParts returns the sub-responses of a $batch response, each as its
// raw HTTP text, the way Azure.Core's Multipart.ParseAsync walks the nested
// multipart body.
func batchParts(t *testing.T, resp *http.Response, body []byte) []string {
	t.Helper()
	_, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		t.Fatalf("batch Content-Type %q: %v", resp.Header.Get("Content-Type"), err)
	}
	outer := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	var parts []string
	for {
		p, err := outer.NextPart()
		if err == io.EOF {
			return parts
		}
		if err != nil {
			t.Fatalf("batch response: %v\n%s", err, body)
		}
		_, cp, err := mime.ParseMediaType(p.Header.Get("Content-Type"))
		if err != nil || cp["boundary"] == "" {
			t.Fatalf("changeset part Content-Type %q", p.Header.Get("Content-Type"))
		}
		inner := multipart.NewReader(p, cp["boundary"])
		for {
			q, err := inner.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("changeset: %v\n%s", err, body)
			}
			b, _ := io.ReadAll(q)
			parts = append(parts, string(b))
		}
	}
}
