package changeset

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"reflect"
	"strings"
	"testing"
)

// crlf joins lines with CRLF. Every golden input below is written out line
// by line so that trailing spaces ("DataServiceVersion: ") are visible.
func crlf(lines ...string) string { return strings.Join(lines, "\r\n") }

// lf joins lines with bare LF.
func lf(lines ...string) string { return strings.Join(lines, "\n") }

const (
	goBatchCT  = "multipart/mixed; boundary=batch_6ac0a0b3-2a8e-4b43-9a5d-6d1b2c3f4e50"
	goFormatQS = "?%24format=application%2Fjson%3Bodata%3Dminimalmetadata"
)

// goSDKBody is a batch request body in the Go SDK's layout (docs/COMPATIBILITY.md §8). Its
// Content-Length (47) does not match the 44-byte body: Decode must not use it.
var goSDKBody = crlf(
	"--batch_6ac0a0b3-2a8e-4b43-9a5d-6d1b2c3f4e50",
	"Content-Type: multipart/mixed; boundary=changeset_0f9e8d7c-6b5a-4c3d-8e2f-1a0b9c8d7e6f",
	"",
	"--changeset_0f9e8d7c-6b5a-4c3d-8e2f-1a0b9c8d7e6f",
	"Content-Transfer-Encoding: binary",
	"Content-Type: application/http",
	"",
	"POST http://127.0.0.1:10002/devstoreaccount1/mytable"+goFormatQS+" HTTP/1.1",
	"Accept: application/json;odata=minimalmetadata",
	"Content-Length: 47",
	"Content-Type: application/json",
	"DataServiceVersion: ",
	"Prefer: return-no-content",
	"x-ms-version: ",
	"",
	`{"PartitionKey":"p1","RowKey":"r1","Age":23}`,
	"--changeset_0f9e8d7c-6b5a-4c3d-8e2f-1a0b9c8d7e6f",
	"Content-Transfer-Encoding: binary",
	"Content-Type: application/http",
	"",
	"DELETE http://127.0.0.1:10002/devstoreaccount1/mytable(PartitionKey='p1',RowKey='r2')"+goFormatQS+" HTTP/1.1",
	"Accept: application/json;odata=minimalmetadata",
	"DataServiceVersion: ",
	"If-Match: *",
	"x-ms-version: ",
	"",
	"",
	"--changeset_0f9e8d7c-6b5a-4c3d-8e2f-1a0b9c8d7e6f--",
	"",
	"--batch_6ac0a0b3-2a8e-4b43-9a5d-6d1b2c3f4e50--",
	"",
)

var goSDKBatch = &Batch{Changeset: true, Requests: []Request{
	{
		Method: "POST",
		Target: "http://127.0.0.1:10002/devstoreaccount1/mytable" + goFormatQS,
		Header: http.Header{
			"Accept":             {"application/json;odata=minimalmetadata"},
			"Content-Length":     {"47"},
			"Content-Type":       {"application/json"},
			"Dataserviceversion": {""},
			"Prefer":             {"return-no-content"},
			"X-Ms-Version":       {""},
		},
		Body: []byte(`{"PartitionKey":"p1","RowKey":"r1","Age":23}`),
	},
	{
		Method: "DELETE",
		Target: "http://127.0.0.1:10002/devstoreaccount1/mytable(PartitionKey='p1',RowKey='r2')" + goFormatQS,
		Header: http.Header{
			"Accept":             {"application/json;odata=minimalmetadata"},
			"Dataserviceversion": {""},
			"If-Match":           {"*"},
			"X-Ms-Version":       {""},
		},
	},
}}

// jsBody follows @azure/data-tables (TablePolicies.ts, transactionHelpers.ts
// and its recordings): lowercase names, a CRLF before the first changeset
// delimiter, an extra CRLF between the header block and the body, no blank
// line between the two closing delimiters.
var jsBody = crlf(
	"--batch_fakeId",
	"content-type: multipart/mixed; boundary=changeset_fakeId",
	"",
	"",
	"--changeset_fakeId",
	"content-type: application/http",
	"content-transfer-encoding: binary",
	"",
	"POST https://fakeaccount.table.core.windows.net/batchTable HTTP/1.1",
	"content-type: application/json;odata=nometadata",
	"accept: application/json;odata=minimalmetadata",
	"accept-charset: UTF-8",
	"dataserviceversion: 3.0",
	"prefer: return-no-content",
	"",
	"",
	`{"PartitionKey":"batchTest","RowKey":"1","name":"first"}`,
	"--changeset_fakeId",
	"content-type: application/http",
	"content-transfer-encoding: binary",
	"",
	"PATCH https://fakeaccount.table.core.windows.net/batchTable(PartitionKey='batchTest',RowKey='2') HTTP/1.1",
	"content-type: application/json",
	"dataserviceversion: 3.0",
	"accept: application/json",
	"if-match: *",
	"",
	"",
	`{"PartitionKey":"batchTest","RowKey":"2","name":"updated"}`,
	"--changeset_fakeId",
	"content-type: application/http",
	"content-transfer-encoding: binary",
	"",
	"DELETE https://fakeaccount.table.core.windows.net/batchTable(PartitionKey='batchTest',RowKey='3') HTTP/1.1",
	"accept: application/json;odata=minimalmetadata",
	"dataserviceversion: 3.0",
	"if-match: *",
	"",
	"",
	"--changeset_fakeId--",
	"--batch_fakeId--",
	"",
)

var jsBatch = &Batch{Changeset: true, Requests: []Request{
	{
		Method: "POST",
		Target: "https://fakeaccount.table.core.windows.net/batchTable",
		Header: http.Header{
			"Content-Type":       {"application/json;odata=nometadata"},
			"Accept":             {"application/json;odata=minimalmetadata"},
			"Accept-Charset":     {"UTF-8"},
			"Dataserviceversion": {"3.0"},
			"Prefer":             {"return-no-content"},
		},
		Body: []byte(`{"PartitionKey":"batchTest","RowKey":"1","name":"first"}`),
	},
	{
		Method: "PATCH",
		Target: "https://fakeaccount.table.core.windows.net/batchTable(PartitionKey='batchTest',RowKey='2')",
		Header: http.Header{
			"Content-Type":       {"application/json"},
			"Dataserviceversion": {"3.0"},
			"Accept":             {"application/json"},
			"If-Match":           {"*"},
		},
		Body: []byte(`{"PartitionKey":"batchTest","RowKey":"2","name":"updated"}`),
	},
	{
		Method: "DELETE",
		Target: "https://fakeaccount.table.core.windows.net/batchTable(PartitionKey='batchTest',RowKey='3')",
		Header: http.Header{
			"Accept":             {"application/json;odata=minimalmetadata"},
			"Dataserviceversion": {"3.0"},
			"If-Match":           {"*"},
		},
	},
}}

// legacyLFBody uses bare LF everywhere (legacy azure-storage-node), with a
// Content-Length that is wrong for the LF body and a Content-ID in the
// sub-request headers.
var legacyLFBody = lf(
	"--batch_a1b2",
	"Content-Type: multipart/mixed; boundary=changeset_c3d4",
	"",
	"--changeset_c3d4",
	"Content-Type: application/http",
	"Content-Transfer-Encoding: binary",
	"",
	"POST http://127.0.0.1:10002/devstoreaccount1/legacy HTTP/1.1",
	"Content-ID: 1",
	"content-type: application/json;odata=nometadata",
	"accept: application/json;odata=minimalmetadata",
	"prefer: return-no-content",
	"content-length: 999",
	"DataServiceVersion: 3.0;",
	"",
	`{"PartitionKey":"p","RowKey":"a","Name":"x"}`,
	"--changeset_c3d4",
	"Content-Type: application/http",
	"Content-Transfer-Encoding: binary",
	"",
	"MERGE http://127.0.0.1:10002/devstoreaccount1/legacy(PartitionKey='p',RowKey='b') HTTP/1.1",
	"Content-ID: 2",
	"if-match: *",
	"",
	`{"Name":"y"}`,
	"--changeset_c3d4",
	"Content-Type: application/http",
	"Content-Transfer-Encoding: binary",
	"",
	"DELETE http://127.0.0.1:10002/devstoreaccount1/legacy(PartitionKey='p',RowKey='c') HTTP/1.1",
	"Content-ID: 3",
	"if-match: *",
	"",
	"",
	"--changeset_c3d4--",
	"--batch_a1b2--",
	"",
)

var legacyLFBatch = &Batch{Changeset: true, Requests: []Request{
	{
		Method: "POST",
		Target: "http://127.0.0.1:10002/devstoreaccount1/legacy",
		Header: http.Header{
			"Content-Id":         {"1"},
			"Content-Type":       {"application/json;odata=nometadata"},
			"Accept":             {"application/json;odata=minimalmetadata"},
			"Prefer":             {"return-no-content"},
			"Content-Length":     {"999"},
			"Dataserviceversion": {"3.0;"},
		},
		Body:      []byte(`{"PartitionKey":"p","RowKey":"a","Name":"x"}`),
		ContentID: "1",
	},
	{
		Method:    "MERGE",
		Target:    "http://127.0.0.1:10002/devstoreaccount1/legacy(PartitionKey='p',RowKey='b')",
		Header:    http.Header{"Content-Id": {"2"}, "If-Match": {"*"}},
		Body:      []byte(`{"Name":"y"}`),
		ContentID: "2",
	},
	{
		Method:    "DELETE",
		Target:    "http://127.0.0.1:10002/devstoreaccount1/legacy(PartitionKey='p',RowKey='c')",
		Header:    http.Header{"Content-Id": {"3"}, "If-Match": {"*"}},
		ContentID: "3",
	},
}}

// javaBody: quoted boundary after a charset parameter (legacy JS sent
// `multipart/mixed;charset="utf-8";boundary=batch_…`), Content-ID in the MIME
// part headers, MERGE, path-only targets as the Java SDK writes them, keys
// with escaped quotes, commas, %2F, raw and escaped non-ASCII, an unescaped
// space, and X-HTTP-Method.
const javaCT = `multipart/mixed;charset="utf-8";boundary="batch_q 1:x"`

var javaBody = crlf(
	"--batch_q 1:x",
	`Content-Type: multipart/mixed; boundary="changeset_q=2"`,
	"",
	"--changeset_q=2",
	"Content-Type: application/http",
	"Content-Transfer-Encoding: binary",
	"Content-ID: 7",
	"",
	"MERGE /devstoreaccount1/t(PartitionKey='O''Brien%2C%20Jr',RowKey='a%2Fb%C3%A9') HTTP/1.1",
	"Accept: application/json;odata=minimalmetadata",
	"Content-Type: application/json",
	"If-Match: W/\"datetime'2024-01-02T03%3A04%3A05.1234567Z'\"",
	"",
	`{"PartitionKey":"O'Brien, Jr","RowKey":"a/bé","V":1}`,
	"--changeset_q=2",
	"Content-Type: application/http",
	"Content-Transfer-Encoding: binary",
	"Content-ID: 8",
	"",
	"POST /devstoreaccount1/t(PartitionKey='O''Brien%2C%20Jr',RowKey='caf\u00e9 \u65e5\u672c') HTTP/1.1",
	"X-HTTP-Method: MERGE",
	"Content-Type: application/json",
	"",
	`{"V":2}`,
	"--changeset_q=2--",
	"",
	"--batch_q 1:x--",
	"",
)

var javaBatch = &Batch{Changeset: true, Requests: []Request{
	{
		Method: "MERGE",
		Target: "/devstoreaccount1/t(PartitionKey='O''Brien%2C%20Jr',RowKey='a%2Fb%C3%A9')",
		Header: http.Header{
			"Accept":       {"application/json;odata=minimalmetadata"},
			"Content-Type": {"application/json"},
			"If-Match":     {"W/\"datetime'2024-01-02T03%3A04%3A05.1234567Z'\""},
		},
		Body:      []byte(`{"PartitionKey":"O'Brien, Jr","RowKey":"a/bé","V":1}`),
		ContentID: "7",
	},
	{
		Method: "POST",
		Target: "/devstoreaccount1/t(PartitionKey='O''Brien%2C%20Jr',RowKey='café 日本')",
		Header: http.Header{
			"X-Http-Method": {"MERGE"},
			"Content-Type":  {"application/json"},
		},
		Body:      []byte(`{"V":2}`),
		ContentID: "8",
	},
}}

// retrieveBody is a retrieve batch: one GET part directly in the batch.
var retrieveBody = crlf(
	"--batch_r",
	"Content-Type: application/http",
	"Content-Transfer-Encoding: binary",
	"Content-ID: r-1",
	"",
	"GET http://127.0.0.1:10002/devstoreaccount1/t(PartitionKey='p',RowKey='r') HTTP/1.1",
	"Accept: application/json;odata=minimalmetadata",
	"DataServiceVersion: 3.0;",
	"",
	"--batch_r--",
	"",
)

var retrieveBatch = &Batch{Requests: []Request{{
	Method: "GET",
	Target: "http://127.0.0.1:10002/devstoreaccount1/t(PartitionKey='p',RowKey='r')",
	Header: http.Header{
		"Accept":             {"application/json;odata=minimalmetadata"},
		"Dataserviceversion": {"3.0;"},
	},
	ContentID: "r-1",
}}}

// oldJSBody: an early @azure/data-tables preview closed the batch with
// "--batch_mockBatchId" (no trailing "--"); the real service accepted it.
var oldJSBody = crlf(
	"--batch_mockBatchId",
	"content-type: multipart/mixed; boundary=changeset_mockChangesetId",
	"",
	"",
	"--changeset_mockChangesetId",
	"content-type: application/http",
	"content-transfer-encoding: binary",
	"",
	"PUT https://fakestorageaccount.table.core.windows.net/t(PartitionKey='batchTest',RowKey='1') HTTP/1.1",
	"Content-Type: application/json",
	"DataServiceVersion: 3.0",
	"Accept: application/json",
	"If-Match: *",
	"",
	`{"PartitionKey":"batchTest","RowKey":"1","name":"updated"}`,
	"--changeset_mockChangesetId--",
	"--batch_mockBatchId",
	"",
)

var oldJSBatch = &Batch{Changeset: true, Requests: []Request{{
	Method: "PUT",
	Target: "https://fakestorageaccount.table.core.windows.net/t(PartitionKey='batchTest',RowKey='1')",
	Header: http.Header{
		"Content-Type":       {"application/json"},
		"Dataserviceversion": {"3.0"},
		"Accept":             {"application/json"},
		"If-Match":           {"*"},
	},
	Body: []byte(`{"PartitionKey":"batchTest","RowKey":"1","name":"updated"}`),
}}}

type goldenCase struct {
	name, contentType, body string
	want                    *Batch
}

var goldenCases = []goldenCase{
	{"go-sdk", goBatchCT, goSDKBody, goSDKBatch},
	{"js-sdk", "multipart/mixed; boundary=batch_fakeId", jsBody, jsBatch},
	{"legacy-lf", "multipart/mixed; boundary=batch_a1b2", legacyLFBody, legacyLFBatch},
	{"java-quoted-contentid-keys", javaCT, javaBody, javaBatch},
	{"retrieve", "multipart/mixed; boundary=batch_r", retrieveBody, retrieveBatch},
	{"old-js-missing-close", "multipart/mixed; boundary=batch_mockBatchId", oldJSBody, oldJSBatch},
	// The whole Go SDK body with bare LF instead of CRLF.
	{"go-sdk-lf", goBatchCT, strings.ReplaceAll(goSDKBody, "\r\n", "\n"), goSDKBatch},
}

func TestDecodeGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(tc.contentType, []byte(tc.body), 100)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if d := diffBatch(got, tc.want); d != "" {
				t.Fatal(d)
			}
		})
	}
}

// diffBatch describes the first difference between two batches, "" if equal.
// Bodies compare as bytes (nil == empty); headers compare exactly.
func diffBatch(got, want *Batch) string {
	if got.Changeset != want.Changeset {
		return fmt.Sprintf("Changeset = %v, want %v", got.Changeset, want.Changeset)
	}
	if len(got.Requests) != len(want.Requests) {
		return fmt.Sprintf("%d requests, want %d", len(got.Requests), len(want.Requests))
	}
	for i := range got.Requests {
		g, w := &got.Requests[i], &want.Requests[i]
		switch {
		case g.Method != w.Method:
			return fmt.Sprintf("request %d: Method = %q, want %q", i, g.Method, w.Method)
		case g.Target != w.Target:
			return fmt.Sprintf("request %d: Target = %q, want %q", i, g.Target, w.Target)
		case !reflect.DeepEqual(g.Header, w.Header):
			return fmt.Sprintf("request %d: Header = %q, want %q", i, g.Header, w.Header)
		case !bytes.Equal(g.Body, w.Body):
			return fmt.Sprintf("request %d: Body = %q, want %q", i, g.Body, w.Body)
		case g.ContentID != w.ContentID:
			return fmt.Sprintf("request %d: ContentID = %q, want %q", i, g.ContentID, w.ContentID)
		}
	}
	return ""
}

func TestDecodeErrors(t *testing.T) {
	part := func(method, target string) string {
		return crlf("--cs", "Content-Type: application/http", "Content-Transfer-Encoding: binary", "",
			method+" "+target+" HTTP/1.1", "Accept: application/json", "", `{"PartitionKey":"p"}`, "")
	}
	changeset := func(parts ...string) string {
		return crlf("--b", "Content-Type: multipart/mixed; boundary=cs", "", strings.Join(parts, "")+"--cs--", "", "--b--", "")
	}
	const ct = "multipart/mixed; boundary=b"
	ops := func(n int) string {
		var ps []string
		for i := 0; i < n; i++ {
			ps = append(ps, part("POST", fmt.Sprintf("/acct/t?i=%d", i)))
		}
		return changeset(ps...)
	}
	// Sanity: the helpers produce valid batches, so the failures below come
	// from the one thing each case breaks.
	if b, err := Decode(ct, []byte(ops(100)), 100); err != nil || len(b.Requests) != 100 {
		t.Fatalf("100 operations: %v", err)
	}

	tests := []struct {
		name, contentType, body string
		index                   int
		tooMany                 bool
	}{
		{"no boundary", "multipart/mixed", ops(1), -1, false},
		{"not multipart", "application/json", ops(1), -1, false},
		{"empty content type", "", ops(1), -1, false},
		{"wrong boundary", "multipart/mixed; boundary=zzz", ops(1), -1, false},
		{"garbage", ct, "this is not a multipart body at all", -1, false},
		{"empty body", ct, "", -1, false},
		{"only closing delimiter", ct, "--b--\r\n", -1, false},
		{"empty changeset", ct, changeset(), -1, false},
		{"GET in changeset", ct, changeset(part("POST", "/a/t"), part("GET", "/a/t(PartitionKey='p',RowKey='r')")), 1, false},
		{"101 operations", ct, ops(101), 99, true},
		{"retrieve plus changeset", ct, crlf("--b", "Content-Type: application/http", "", "GET /a/t HTTP/1.1", "", "",
			"--b", "Content-Type: multipart/mixed; boundary=cs", "", part("POST", "/a/t")+"--cs--", "--b--", ""), -1, false},
		{"two changesets", ct, crlf("--b", "Content-Type: multipart/mixed; boundary=cs", "", part("POST", "/a/t")+"--cs--",
			"--b", "Content-Type: multipart/mixed; boundary=cs", "", part("POST", "/a/t")+"--cs--", "--b--", ""), -1, false},
		{"two retrieves", ct, crlf("--b", "Content-Type: application/http", "", "GET /a/t HTTP/1.1", "", "",
			"--b", "Content-Type: application/http", "", "GET /a/t HTTP/1.1", "", "", "--b--", ""), -1, false},
		{"POST outside changeset", ct, crlf("--b", "Content-Type: application/http", "", "POST /a/t HTTP/1.1", "", "{}", "--b--", ""), -1, false},
		{"part without content type", ct, crlf("--b", "", "GET /a/t HTTP/1.1", "", "", "--b--", ""), -1, false},
		{"truncated", ct, ops(2)[:len(ops(2))/2], -1, false},
		{"no request line", ct, changeset(crlf("--cs", "Content-Type: application/http", "", "", "")), 0, false},
		{"request line without version", ct, changeset(crlf("--cs", "Content-Type: application/http", "", "DELETE /a/t", "", "")), 0, false},
		{"bad header line", ct, changeset(part("POST", "/a/t"), crlf("--cs", "Content-Type: application/http", "", "DELETE /a/t HTTP/1.1", "no colon here", "", "")), 1, false},
		{"control char in header", ct, changeset(crlf("--cs", "Content-Type: application/http", "", "DELETE /a/t HTTP/1.1", "If-Match: a\x00b", "", "")), 0, false},
		{"nested changeset", ct, changeset(crlf("--cs", "Content-Type: multipart/mixed; boundary=x", "", "--x--", "")), 0, false},
		{"base64 part", ct, changeset(crlf("--cs", "Content-Type: application/http", "Content-Transfer-Encoding: base64", "", "REVMRVRF", "")), -1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Decode(tc.contentType, []byte(tc.body), 100)
			if err == nil {
				t.Fatalf("Decode succeeded with %d requests, want an error", len(b.Requests))
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v is not an *Error", err, err)
			}
			if e.Index != tc.index {
				t.Errorf("Index = %d, want %d (%v)", e.Index, tc.index, err)
			}
			if e.TooMany != tc.tooMany || errors.Is(err, ErrTooManyOperations) != tc.tooMany {
				t.Errorf("TooMany = %v, errors.Is(ErrTooManyOperations) = %v, want %v",
					e.TooMany, errors.Is(err, ErrTooManyOperations), tc.tooMany)
			}
			if tc.tooMany {
				const want = "99:The batch request operation exceeds the maximum 100 changes per change set."
				if got := e.ClientMessage(); got != want {
					t.Errorf("ClientMessage() = %q, want %q", got, want)
				}
			} else if e.Message != "One of the request inputs is not valid." {
				t.Errorf("Message = %q", e.Message)
			}
			if strings.Contains(e.Message, "\n") {
				t.Errorf("Message holds a newline: %q", e.Message)
			}
		})
	}
}

func TestDecodeMaxOps(t *testing.T) {
	// maxOps <= 0: no limit.
	b, err := Decode(goBatchCT, []byte(goSDKBody), 0)
	if err != nil || len(b.Requests) != 2 {
		t.Fatalf("maxOps 0: %v", err)
	}
	if _, err := Decode(goBatchCT, []byte(goSDKBody), 2); err != nil {
		t.Fatalf("maxOps 2 with 2 operations: %v", err)
	}
	_, err = Decode(goBatchCT, []byte(goSDKBody), 1)
	var e *Error
	if !errors.As(err, &e) || !e.TooMany || e.Index != 0 ||
		e.ClientMessage() != "0:The batch request operation exceeds the maximum 1 changes per change set." {
		t.Fatalf("maxOps 1 with 2 operations: %#v", err)
	}
}

func TestDecodeContentIDPrecedence(t *testing.T) {
	// A Content-ID in the sub-request wins over one in the MIME part; an
	// empty one in the sub-request does not.
	body := crlf(
		"--b", "Content-Type: multipart/mixed; boundary=cs", "",
		"--cs", "Content-Type: application/http", "Content-ID: part-1", "",
		"DELETE /a/t(PartitionKey='p',RowKey='1') HTTP/1.1", "Content-ID: req-1", "", "",
		"--cs", "Content-Type: application/http", "Content-ID: part-2", "",
		"DELETE /a/t(PartitionKey='p',RowKey='2') HTTP/1.1", "Content-ID: ", "", "",
		"--cs--", "--b--", "")
	b, err := Decode("multipart/mixed; boundary=b", []byte(body), 100)
	if err != nil {
		t.Fatal(err)
	}
	if b.Requests[0].ContentID != "req-1" || b.Requests[1].ContentID != "part-2" {
		t.Fatalf("ContentIDs = %q, %q", b.Requests[0].ContentID, b.Requests[1].ContentID)
	}
}

func TestDecodeHeaderEdgeCases(t *testing.T) {
	body := crlf(
		"--b", "Content-Type: multipart/mixed; boundary=cs", "",
		"--cs", "Content-Type: application/http", "",
		"", // blank line before the request line
		"  PUT   /a/t(PartitionKey='p',RowKey='r x')   HTTP/1.1  ",
		"If-Match:*",
		"accept: application/json",
		"Accept:   application/json;odata=nometadata  ",
		"X-Folded: first",
		"\tsecond",
		"Content-Type\t: application/json",
		"", "\t{\"a\":1}  \r\n\r\n",
		"--cs--", "--b--", "")
	b, err := Decode("multipart/mixed; boundary=b", []byte(body), 100)
	if err != nil {
		t.Fatal(err)
	}
	want := &Batch{Changeset: true, Requests: []Request{{
		Method: "PUT",
		Target: "/a/t(PartitionKey='p',RowKey='r x')",
		Header: http.Header{
			"If-Match":     {"*"},
			"Accept":       {"application/json", "application/json;odata=nometadata"},
			"X-Folded":     {"first second"},
			"Content-Type": {"application/json"},
		},
		Body: []byte(`{"a":1}`),
	}}}
	if d := diffBatch(b, want); d != "" {
		t.Fatal(d)
	}
}

// TestDecodeFoldedHeaders: continuation lines join a header's value with
// single spaces, wherever the header stands, and each is copied once:
// 10,000 of them cost a few allocations, not one (and a copy of the value
// so far) each, which made one 4 MiB batch cost minutes of CPU. A header
// block past MaxHeaderBytes is refused.
func TestDecodeFoldedHeaders(t *testing.T) {
	part := func(headers ...string) string {
		return crlf(append(append([]string{"--b", "Content-Type: multipart/mixed; boundary=cs", "",
			"--cs", "Content-Type: application/http", "",
			"PUT /a/t(PartitionKey='p',RowKey='r') HTTP/1.1"}, headers...),
			"", `{"a":1}`, "--cs--", "--b--", "")...)
	}
	body := part("X-A:", " one", "\t", "  two  ", "X-B: b", "X-A: again", "\tmore", "X-C: last", " fold")
	b, err := Decode("multipart/mixed; boundary=b", []byte(body), 100)
	if err != nil {
		t.Fatal(err)
	}
	want := http.Header{"X-A": {"one two", "again more"}, "X-B": {"b"}, "X-C": {"last fold"}}
	if got := b.Requests[0].Header; !reflect.DeepEqual(got, want) {
		t.Fatalf("headers %v, want %v", got, want)
	}

	many := []string{"X-Long: v"}
	for range 10000 {
		many = append(many, " a")
	}
	body = part(many...)
	var got *Batch
	allocs := testing.AllocsPerRun(5, func() {
		if got, err = Decode("multipart/mixed; boundary=b", []byte(body), 100); err != nil {
			t.Fatal(err)
		}
	})
	if v := got.Requests[0].Header.Get("X-Long"); len(v) != 1+2*10000 || !strings.HasPrefix(v, "v a a") {
		t.Fatalf("folded value of %d bytes, want %d", len(v), 1+2*10000)
	}
	if allocs > 100 {
		t.Errorf("%v allocations for 10,000 continuation lines: one or more each", allocs)
	}

	huge := []string{"X-Long: v"}
	for len(huge)*4 < MaxHeaderBytes+100 {
		huge = append(huge, " a")
	}
	if _, err := Decode("multipart/mixed; boundary=b", []byte(part(huge...)), 100); err == nil || !strings.Contains(err.Error(), "sub-request headers larger than") {
		t.Errorf("a header block past %d bytes: %v", MaxHeaderBytes, err)
	}
}

// TestCanonicalKey: canonicalKey gives textproto's canonical form for the
// common names in any case, and for others.
func TestCanonicalKey(t *testing.T) {
	names := append([]string{"x-ms-version", "DATASERVICEVERSION", "dataServiceVersion", "If-match", "content-id", "X-Custom-Thing", "a", "Accept-", "-x", "x_y", "content-typf"}, commonKeys[:]...)
	for _, n := range names {
		if got, want := canonicalKey(n), textproto.CanonicalMIMEHeaderKey(n); got != want {
			t.Errorf("canonicalKey(%q) = %q, want %q", n, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { canonicalKey("x-ms-version") }); n != 0 {
		t.Errorf("canonicalKey of a common name in lower case: %v allocations", n)
	}
}
