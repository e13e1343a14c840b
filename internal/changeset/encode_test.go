package changeset

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"mime/multipart"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/partita/partita/internal/raceflag"
)

// Boundaries of the two golden responses below (docs/COMPATIBILITY.md §8).
const (
	specBatch     = "batchresponse_3f1f3a2e-6c0d-4c8e-9a61-2b3c4d5e6f70"
	specChangeset = "changesetresponse_9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a"
)

var successResps = []Response{
	{Status: 204, Header: []HeaderField{
		{"X-Content-Type-Options", "nosniff"},
		{"Cache-Control", "no-cache"},
		{"Preference-Applied", "return-no-content"},
		{"DataServiceVersion", "3.0;"},
		{"Location", "http://127.0.0.1:10002/devstoreaccount1/mytable(PartitionKey='p1',RowKey='r1')"},
		{"DataServiceId", "http://127.0.0.1:10002/devstoreaccount1/mytable(PartitionKey='p1',RowKey='r1')"},
		{"ETag", `W/"datetime'2024-01-02T03%3A04%3A05.1234567Z'"`},
	}},
	{Status: 204, Header: []HeaderField{
		{"X-Content-Type-Options", "nosniff"},
		{"Cache-Control", "no-cache"},
		{"DataServiceVersion", "1.0;"},
	}},
}

const conflictJSON = `{"odata.error":{"code":"EntityAlreadyExists","message":{"lang":"en-US","value":"1:The specified entity already exists.\nRequestId:7c1e0e4a-0002-0034-1a2b-5a3c4d000000\nTime:2024-01-02T03:04:05.1234567Z"}}}`

var failureResps = []Response{{
	Status: 409,
	Header: []HeaderField{
		{"X-Content-Type-Options", "nosniff"},
		{"DataServiceVersion", "3.0;"},
		{"Content-Type", "application/json;odata=minimalmetadata;streaming=true;charset=utf-8"},
	},
	Body: []byte(conflictJSON),
}}

// The expected bytes are the service's response layout (docs/COMPATIBILITY.md §8), line by line.
func TestAppendResponseGoldenSuccess(t *testing.T) {
	want := crlf(
		"--batchresponse_3f1f3a2e-6c0d-4c8e-9a61-2b3c4d5e6f70",
		"Content-Type: multipart/mixed; boundary=changesetresponse_9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a",
		"",
		"--changesetresponse_9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a",
		"Content-Type: application/http",
		"Content-Transfer-Encoding: binary",
		"",
		"HTTP/1.1 204 No Content",
		"X-Content-Type-Options: nosniff",
		"Cache-Control: no-cache",
		"Preference-Applied: return-no-content",
		"DataServiceVersion: 3.0;",
		"Location: http://127.0.0.1:10002/devstoreaccount1/mytable(PartitionKey='p1',RowKey='r1')",
		"DataServiceId: http://127.0.0.1:10002/devstoreaccount1/mytable(PartitionKey='p1',RowKey='r1')",
		`ETag: W/"datetime'2024-01-02T03%3A04%3A05.1234567Z'"`,
		"",
		"",
		"--changesetresponse_9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a",
		"Content-Type: application/http",
		"Content-Transfer-Encoding: binary",
		"",
		"HTTP/1.1 204 No Content",
		"X-Content-Type-Options: nosniff",
		"Cache-Control: no-cache",
		"DataServiceVersion: 1.0;",
		"",
		"",
		"--changesetresponse_9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a--",
		"--batchresponse_3f1f3a2e-6c0d-4c8e-9a61-2b3c4d5e6f70--",
		"",
	)
	prefix := []byte("keep")
	got := AppendResponse(prefix, specBatch, specChangeset, successResps)
	if !bytes.HasPrefix(got, prefix) {
		t.Fatal("AppendResponse dropped dst")
	}
	if g := string(got[len(prefix):]); g != want {
		t.Fatalf("got\n%q\nwant\n%q", g, want)
	}
	// The byte rule of 6.3, stated directly.
	if !strings.Contains(want, "'\"\r\n\r\n\r\n--changesetresponse_") {
		t.Fatal("golden text lost the CRLF CRLF CRLF before the delimiter")
	}
}

func TestAppendResponseGoldenFailure(t *testing.T) {
	want := crlf(
		"--batchresponse_3f1f3a2e-6c0d-4c8e-9a61-2b3c4d5e6f70",
		"Content-Type: multipart/mixed; boundary=changesetresponse_9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a",
		"",
		"--changesetresponse_9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a",
		"Content-Type: application/http",
		"Content-Transfer-Encoding: binary",
		"",
		"HTTP/1.1 409 Conflict",
		"X-Content-Type-Options: nosniff",
		"DataServiceVersion: 3.0;",
		"Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8",
		"",
		conflictJSON,
		"--changesetresponse_9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a--",
		"--batchresponse_3f1f3a2e-6c0d-4c8e-9a61-2b3c4d5e6f70--",
		"",
	)
	if got := string(AppendResponse(nil, specBatch, specChangeset, failureResps)); got != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}

func TestAppendResponseContentIDAndReasons(t *testing.T) {
	got := string(AppendResponse(nil, "B", "C", []Response{
		{Status: 201, ContentID: "3", Header: []HeaderField{{"ETag", "x"}}, Body: []byte("{}")},
		{Status: 412, ContentID: "4"},
		{Status: 404},
		{Status: 400, Header: []HeaderField{{"Bad\r\nName", "v\r\nInjected: 1"}}},
	}))
	want := crlf(
		"--B", "Content-Type: multipart/mixed; boundary=C", "",
		"--C", "Content-Type: application/http", "Content-Transfer-Encoding: binary", "",
		"HTTP/1.1 201 Created", "Content-ID: 3", "ETag: x", "", "{}",
		"--C", "Content-Type: application/http", "Content-Transfer-Encoding: binary", "",
		"HTTP/1.1 412 Precondition Failed", "Content-ID: 4", "", "",
		"--C", "Content-Type: application/http", "Content-Transfer-Encoding: binary", "",
		"HTTP/1.1 404 Not Found", "", "",
		"--C", "Content-Type: application/http", "Content-Transfer-Encoding: binary", "",
		"HTTP/1.1 400 Bad Request", "Bad  Name: v  Injected: 1", "", "",
		"--C--", "--B--", "")
	if got != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}

// TestAppendResponseOneAllocation: responseSize covers what AppendResponse
// writes, for every status the service answers with, so a 100-operation
// response is built without regrowing.
func TestAppendResponseOneAllocation(t *testing.T) {
	var resps []Response
	for st := 100; st < 600; st++ {
		if http.StatusText(st) == "" {
			continue
		}
		resps = append(resps, Response{Status: st, ContentID: strconv.Itoa(st), Body: make([]byte, st%7*100),
			Header: []HeaderField{{"Location", strings.Repeat("x", st%50)}, {"ETag", `W/"datetime'2024-01-01T00%3A00%3A00.0000000Z'"`}}})
	}
	bb, cb := "batchresponse_"+strings.Repeat("b", 36), "changesetresponse_"+strings.Repeat("c", 36)
	for i := range resps {
		one := resps[i : i+1]
		if n, size := len(AppendResponse(nil, bb, cb, one)), responseSize(bb, cb, one); n > size {
			t.Fatalf("status %d: response is %d bytes, responseSize said %d", one[0].Status, n, size)
		}
	}
	// A hundred parts of the longest reason phrase and every header, so
	// the envelope's slack cannot hide a per-part shortfall.
	long := make([]Response, 100)
	for i := range long {
		long[i] = Response{Status: http.StatusNetworkAuthenticationRequired, ContentID: "100", Header: []HeaderField{{"X", "y"}}}
	}
	if n, size := len(AppendResponse(nil, bb, cb, long)), responseSize(bb, cb, long); n > size {
		t.Fatalf("100 parts: response is %d bytes, responseSize said %d", n, size)
	}
	if raceflag.Enabled {
		return
	}
	if n := testing.AllocsPerRun(10, func() { AppendResponse(nil, bb, cb, resps) }); n != 1 {
		t.Fatalf("AppendResponse of %d parts: %v allocations, want 1", len(resps), n)
	}
}

func TestAppendRetrieveResponse(t *testing.T) {
	got := string(AppendRetrieveResponse(nil, "batchresponse_x", Response{
		Status: 200,
		Header: []HeaderField{
			{"Content-Type", "application/json;odata=minimalmetadata;streaming=true;charset=utf-8"},
			{"ETag", `W/"datetime'2024-01-02T03%3A04%3A05.1234567Z'"`},
		},
		Body: []byte(`{"PartitionKey":"p","RowKey":"r"}`),
	}))
	want := crlf(
		"--batchresponse_x",
		"Content-Type: application/http",
		"Content-Transfer-Encoding: binary",
		"",
		"HTTP/1.1 200 OK",
		"Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8",
		`ETag: W/"datetime'2024-01-02T03%3A04%3A05.1234567Z'"`,
		"",
		`{"PartitionKey":"p","RowKey":"r"}`,
		"--batchresponse_x--",
		"")
	if got != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
	// A standard MIME reader with the boundary from the header finds one
	// application/http part holding a 200 response with the entity.
	mr := multipart.NewReader(strings.NewReader(got), "batchresponse_x")
	p, err := mr.NextPart()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(p), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != `{"PartitionKey":"p","RowKey":"r"}` || resp.Header.Get("ETag") == "" {
		t.Fatalf("status %d body %q header %v", resp.StatusCode, body, resp.Header)
	}
	if _, err := mr.NextPart(); err != io.EOF {
		t.Fatalf("second part: %v", err)
	}
}

func TestNewBoundaries(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		b, c := NewBoundaries()
		bg, ok1 := strings.CutPrefix(b, "batchresponse_")
		cg, ok2 := strings.CutPrefix(c, "changesetresponse_")
		if !ok1 || !ok2 || !re.MatchString(bg) || !re.MatchString(cg) {
			t.Fatalf("boundaries %q %q", b, c)
		}
		if seen[bg] || seen[cg] || bg == cg {
			t.Fatalf("repeated GUID in %q %q", b, c)
		}
		seen[bg], seen[cg] = true, true
	}
	if ContentType("batchresponse_x") != "multipart/mixed; boundary=batchresponse_x" {
		t.Fatal(ContentType("batchresponse_x"))
	}
}

// TestAppendRequestGoldenGoSDK: encoding the Go SDK's batch with its
// boundaries gives back the bytes the Go SDK sends (docs/COMPATIBILITY.md §8).
func TestAppendRequestGoldenGoSDK(t *testing.T) {
	got := AppendRequest(nil, "batch_6ac0a0b3-2a8e-4b43-9a5d-6d1b2c3f4e50",
		"changeset_0f9e8d7c-6b5a-4c3d-8e2f-1a0b9c8d7e6f", goSDKBatch)
	if string(got) != goSDKBody {
		t.Fatalf("got\n%q\nwant\n%q", got, goSDKBody)
	}
}

func TestAppendRequestRoundTrip(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			enc := AppendRequest(nil, "batch_rt", "changeset_rt", tc.want)
			got, err := Decode(ContentType("batch_rt"), enc, 100)
			if err != nil {
				t.Fatalf("Decode(AppendRequest): %v\n%q", err, enc)
			}
			if d := diffBatch(got, tc.want); d != "" {
				t.Fatalf("%s\n%q", d, enc)
			}
		})
	}
}

// ---- Client parsers, reimplemented faithfully from the SDK sources ----

// goSDKParse is aztables v1.4.1 buildTransactionResponse (transactional_batch.go)
// without the azcore types: it returns the sub-statuses it read and whether
// it would report an error. Like the SDK, it ignores a multipart error on
// the inner document (the loop just ends), so callers must compare the
// number of statuses too.
func goSDKParse(bytesBody []byte, req *http.Request) (statuses []int, failed bool, err error) {
	reader := bytes.NewReader(bytesBody)
	if bytes.IndexByte(bytesBody, '{') == 0 {
		return nil, true, nil // runtime.NewResponseError(resp)
	}
	outerBoundary := goSDKGetBoundaryName(bytesBody)
	mpReader := multipart.NewReader(reader, outerBoundary)
	outerPart, err := mpReader.NextPart()
	if err != nil {
		return nil, false, err
	}
	innerBytes, err := io.ReadAll(outerPart)
	if err != nil && err != io.ErrUnexpectedEOF {
		return nil, false, err
	}
	innerBoundary := goSDKGetBoundaryName(innerBytes)
	reader = bytes.NewReader(innerBytes)
	mpReader = multipart.NewReader(reader, innerBoundary)
	innerPart, err := mpReader.NextPart()
	for ; err == nil; innerPart, err = mpReader.NextPart() {
		part, err := io.ReadAll(innerPart)
		if err != nil {
			break
		}
		r, err := http.ReadResponse(bufio.NewReader(bytes.NewBuffer(part)), req)
		if err != nil {
			return statuses, false, err
		}
		statuses = append(statuses, r.StatusCode)
		if r.StatusCode >= 400 {
			return statuses, true, nil
		}
	}
	return statuses, false, nil
}

// goSDKParseRecover is goSDKParse with the SDK's panics turned into errors.
func goSDKParseRecover(body []byte, req *http.Request) (statuses []int, failed bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("aztables would panic: %v", r)
		}
	}()
	return goSDKParse(body, req)
}

func goSDKGetBoundaryName(bytesBody []byte) string {
	end := bytes.Index(bytesBody, []byte("\n"))
	if end > 0 && bytesBody[end-1] == '\r' {
		end -= 1
	}
	return string(bytesBody[2:end]) // panics on a body whose first line is shorter than 2 bytes
}

// jsParse is @azure/data-tables parseTransactionResponse (TableTransaction.ts)
// for a 202: split on "--changesetresponse_", drop the first and last
// pieces, read /HTTP\/1.1 ([0-9]*)/ from each, and fail on any sub-response
// holding /\{(.*)\}/ (the error JSON) — even a successful one.
func jsParse(body string) (statuses []int, code, message string, failed bool, err error) {
	split := strings.Split(body, "--changesetresponse_")
	if len(split) < 2 {
		return nil, "", "", false, errors.New("no sub-responses")
	}
	statusRE := regexp.MustCompile(`HTTP/1.1 ([0-9]*)`)
	bodyRE := regexp.MustCompile(`\{(.*)\}`)
	for _, sub := range split[1 : len(split)-1] {
		m := statusRE.FindStringSubmatch(sub)
		if len(m) != 2 {
			return nil, "", "", false, fmt.Errorf("couldn't extract status from %q", sub)
		}
		st, convErr := strconv.Atoi(m[1])
		if convErr != nil {
			return nil, "", "", false, convErr
		}
		statuses = append(statuses, st)
		if bm := jsFind(bodyRE, sub); bm != "" {
			var e struct {
				OdataError struct {
					Code    string `json:"code"`
					Message struct {
						Value string `json:"value"`
					} `json:"message"`
				} `json:"odata.error"`
			}
			_ = json.Unmarshal([]byte(bm), &e)
			return statuses, e.OdataError.Code, e.OdataError.Message.Value, true, nil
		}
	}
	return statuses, "", "", false, nil
}

// jsFind is String.prototype.match without flags: the first match, where
// '.' does not match the JS line terminators \r, \n, U+2028 and U+2029.
func jsFind(re *regexp.Regexp, s string) string {
	for _, l := range strings.FieldsFunc(s, func(r rune) bool {
		return r == '\r' || r == '\n' || r == '\u2028' || r == '\u2029'
	}) {
		if m := re.FindString(l); m != "" {
			return m
		}
	}
	return ""
}

// javaParse is azure-data-tables TablesMultipartSerializer.deserialize: the
// first line must start with "--batchresponse_"; every line starting with
// "--changesetresponse_" closes the current sub-response; the status is
// characters 9–12 of the "HTTP/1.1" line.
func javaParse(body string) (statuses []int, err error) {
	lines := strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n")
	if !strings.HasPrefix(lines[0], "--batchresponse_") {
		return nil, errors.New("Invalid multipart response")
	}
	current := -1
	for _, line := range lines[1:] {
		switch {
		case strings.HasPrefix(line, "--changesetresponse_"):
			if current >= 0 {
				statuses = append(statuses, current)
			}
			current = -1
		case current < 0 && strings.HasPrefix(line, "HTTP/1.1"):
			if len(line) < 12 {
				return nil, fmt.Errorf("short status line %q", line)
			}
			st, err := strconv.Atoi(line[9:12])
			if err != nil {
				return nil, err
			}
			current = st
		}
	}
	return statuses, nil
}

// mimeParse is what .NET and Python do: a standard MIME reader using the
// boundary from the response Content-Type, the inner boundary from the
// changeset part's Content-Type, one application/http response per part.
func mimeParse(contentType string, body []byte) (statuses []int, err error) {
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, err
	}
	outer := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	cs, err := outer.NextPart()
	if err != nil {
		return nil, err
	}
	_, cparams, err := mime.ParseMediaType(cs.Header.Get("Content-Type"))
	if err != nil {
		return nil, err
	}
	inner := multipart.NewReader(cs, cparams["boundary"])
	for {
		p, err := inner.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if p.Header.Get("Content-Type") != "application/http" || p.Header.Get("Content-Transfer-Encoding") != "binary" {
			return nil, fmt.Errorf("part headers %v", p.Header)
		}
		r, err := http.ReadResponse(bufio.NewReader(p), nil)
		if err != nil {
			return nil, err
		}
		statuses = append(statuses, r.StatusCode)
	}
	if _, err := outer.NextPart(); err != io.EOF {
		return nil, fmt.Errorf("after the changeset: %v", err)
	}
	return statuses, nil
}

func TestClientParsersAcceptResponse(t *testing.T) {
	batch, cs := NewBoundaries()
	post, _ := http.NewRequest("POST", "http://127.0.0.1:10002/devstoreaccount1/$batch", nil)

	many := make([]Response, 100)
	for i := range many {
		many[i] = Response{Status: 204, Header: []HeaderField{{"ETag", fmt.Sprintf(`W/"datetime'%d'"`, i)}}}
	}
	tests := []struct {
		name     string
		resps    []Response
		statuses []int
		failed   bool
	}{
		{"success", successResps, []int{204, 204}, false},
		{"failure", failureResps, []int{409}, true},
		{"100 ops", many, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.statuses
			if want == nil {
				for range tc.resps {
					want = append(want, 204)
				}
			}
			body := AppendResponse(nil, batch, cs, tc.resps)

			st, failed, err := goSDKParse(body, post)
			if err != nil || failed != tc.failed || fmt.Sprint(st) != fmt.Sprint(want) {
				t.Errorf("Go: statuses %v failed %v err %v; want %v failed %v", st, failed, err, want, tc.failed)
			}

			st, code, msg, failed, err := jsParse(string(body))
			if err != nil || failed != tc.failed || fmt.Sprint(st) != fmt.Sprint(want) {
				t.Errorf("JS: statuses %v failed %v err %v; want %v failed %v", st, failed, err, want, tc.failed)
			}
			if tc.failed && (code != "EntityAlreadyExists" || !strings.HasPrefix(msg, "1:")) {
				t.Errorf("JS: code %q message %q", code, msg)
			}

			if st, err := javaParse(string(body)); err != nil || fmt.Sprint(st) != fmt.Sprint(want) {
				t.Errorf("Java: statuses %v err %v; want %v", st, err, want)
			}
			if st, err := mimeParse(ContentType(batch), body); err != nil || fmt.Sprint(st) != fmt.Sprint(want) {
				t.Errorf("MIME (.NET/Python): statuses %v err %v; want %v", st, err, want)
			}
		})
	}
}

// TestClientParsersRejectBrokenLayouts shows that the emulated parsers are
// sensitive to the rules AppendResponse follows, so the test above can fail.
func TestClientParsersRejectBrokenLayouts(t *testing.T) {
	good := string(AppendResponse(nil, specBatch, specChangeset, successResps))
	post, _ := http.NewRequest("POST", "http://x/$batch", nil)

	// A blank line between the changeset part's headers and its first
	// delimiter: Go reads the empty first line as the inner boundary (and
	// aztables v1.4.1 even slices out of range on it).
	blank := strings.Replace(good, "changesetresponse_9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a\r\n\r\n", "changesetresponse_9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a\r\n\r\n\r\n", 1)
	if st, _, err := goSDKParseRecover([]byte(blank), post); err == nil && len(st) == 2 {
		t.Error("Go parser accepted a blank line before the first inner delimiter")
	}

	// A preamble before the first outer delimiter: Go takes the first line
	// as the boundary (and panics on it too).
	if st, _, err := goSDKParseRecover([]byte("\r\n"+good), post); err == nil && len(st) == 2 {
		t.Error("Go parser accepted a preamble")
	}

	// Java needs the batchresponse_ prefix on line 1.
	if _, err := javaParse(strings.ReplaceAll(good, "batchresponse_", "batch_")); err == nil {
		t.Error("Java parser accepted a batch_ boundary")
	}

	// JS fails a successful sub-response that carries a JSON body.
	withBody := AppendResponse(nil, specBatch, specChangeset, []Response{{Status: 201, Body: []byte(`{"PartitionKey":"p"}`)}})
	if _, _, _, failed, _ := jsParse(string(withBody)); !failed {
		t.Error("JS parser accepted a 201 with a JSON body")
	}
}

// TestAppendRequestHeaderOrder checks the order of a sub-request's header
// lines against a plain sort, for random header sets of up to 20 names
// (more than the encoder keeps on its stack), among them keys that share a
// wire spelling ("Etag" and "ETag") and so are ordered by key.
func TestAppendRequestHeaderOrder(t *testing.T) {
	pool := []string{"Accept", "Content-Type", "Prefer", "Dataserviceversion", "DataServiceVersion",
		"Maxdataserviceversion", "X-Ms-Version", "x-ms-version", "X-Ms-Date", "X-Ms-Client-Request-Id",
		"Content-Id", "If-Match", "Etag", "ETag", "X-Http-Method", "Content-Length", "A", "Z", "a", "z",
		"X-Custom", "Authorization"}
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 2000 {
		h := http.Header{}
		for range rng.IntN(21) {
			k := pool[rng.IntN(len(pool))]
			h[k] = append(h[k], fmt.Sprintf("v%d", rng.IntN(100)))
		}
		type line struct{ wire, key, text string }
		var want []line
		for k, vs := range h {
			for _, v := range vs {
				want = append(want, line{wireName(k), k, wireName(k) + ": " + v})
			}
		}
		// A stable sort keeps one key's values in their order.
		slices.SortStableFunc(want, func(a, b line) int {
			if c := strings.Compare(a.wire, b.wire); c != 0 {
				return c
			}
			return strings.Compare(a.key, b.key)
		})
		enc := string(appendRequestPart(nil, &Request{Method: "GET", Target: "/t", Header: h}))
		// After the request line: one CRLF-terminated line per value, then
		// the blank line (the body is empty).
		head, ok := strings.CutSuffix(enc[strings.Index(enc, "HTTP/1.1\r\n")+len("HTTP/1.1\r\n"):], "\r\n")
		if !ok {
			t.Fatalf("round %d: no blank line after the head:\n%s", round, enc)
		}
		got := strings.SplitAfter(head, "\r\n")
		got = got[:len(got)-1] // "" after the last CRLF
		for i := range got {
			got[i] = strings.TrimSuffix(got[i], "\r\n")
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: %d header lines, want %d:\n%s", round, len(got), len(want), enc)
		}
		for i := range want {
			if got[i] != want[i].text {
				t.Fatalf("round %d: line %d is %q, want %q:\n%s", round, i, got[i], want[i].text, enc)
			}
		}
	}
}

func BenchmarkAppendRequest100(b *testing.B) {
	body := []byte(`{"PartitionKey":"p0001","RowKey":"r000000000002","Payload":"` + strings.Repeat("x", 1024) + `"}`)
	reqs := make([]Request, 100)
	for i := range reqs {
		reqs[i] = Request{Method: http.MethodPost, Target: "http://127.0.0.1:10002/devstoreaccount1/bench", Body: body,
			Header: http.Header{
				"Accept":             {"application/json;odata=minimalmetadata"},
				"Content-Type":       {"application/json"},
				"Prefer":             {"return-no-content"},
				"Dataserviceversion": {"3.0"},
				"Content-Length":     {strconv.Itoa(len(body))},
			}}
	}
	batch := &Batch{Requests: reqs, Changeset: true}
	var dst []byte
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendRequest(dst[:0], "batch_b", "changeset_c", batch)
	}
	b.SetBytes(int64(len(dst)))
}

// BenchmarkDecode100 decodes the changeset of 100 inserts of ~1 KiB that
// the bench tool's batch workload sends.
func BenchmarkDecode100(b *testing.B) {
	body := []byte(`{"PartitionKey":"p0001","RowKey":"r000000000002","Payload":"` + strings.Repeat("x", 1024) + `"}`)
	reqs := make([]Request, 100)
	for i := range reqs {
		reqs[i] = Request{Method: http.MethodPost, Target: "http://127.0.0.1:10002/devstoreaccount1/bench", Body: body,
			Header: http.Header{
				"Accept":             {"application/json;odata=minimalmetadata"},
				"Content-Type":       {"application/json"},
				"Prefer":             {"return-no-content"},
				"Dataserviceversion": {"3.0"},
				"Content-Length":     {strconv.Itoa(len(body))},
			}}
	}
	enc := AppendRequest(nil, "batch_b", "changeset_c", &Batch{Requests: reqs, Changeset: true})
	ct := ContentType("batch_b")
	b.Run("Decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			if _, err := Decode(ct, enc, 100); err != nil {
				b.Fatal(err)
			}
		}
	})
	// decodeStd is mime/multipart's path, which Decode took for every
	// input before decodeStrict.
	b.Run("std", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			if _, err := decodeStd(enc, "batch_b", 100); err != nil {
				b.Fatal(err)
			}
		}
	})
}
