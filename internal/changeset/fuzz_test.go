package changeset

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// Fixed boundaries for the re-encoding and for the envelope; inputs
// containing their GUID parts are skipped (a body may legally contain any
// boundary but the one of its own document).
const (
	fuzzBatchB     = "batch_fz-5c1e4b7a-93d2-4f0e-b6a8-2d71c0e9f3a4"
	fuzzChangesetB = "changeset_fz-8e2b6d90-1a4c-4b3f-9d75-c0f8a1e26b53"
	fuzzMarker1    = "fz-5c1e4b7a"
	fuzzMarker2    = "fz-8e2b6d90"
)

// wrapOp puts op into a valid batch as the content of the only sub-request,
// so that most mutations of op reach the sub-request parser.
func wrapOp(op []byte) []byte {
	var b []byte
	b = append(b, "--"+fuzzBatchB+"\r\nContent-Type: multipart/mixed; boundary="+fuzzChangesetB+"\r\n\r\n"...)
	b = append(b, "--"+fuzzChangesetB+"\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"...)
	b = append(b, op...)
	b = append(b, "\r\n--"+fuzzChangesetB+"--\r\n--"+fuzzBatchB+"--\r\n"...)
	return b
}

// FuzzDecode: Decode never panics, every error is an *Error, and a decoded
// batch survives AppendRequest → Decode unchanged (and re-encodes to the same
// bytes). Each input is tried as a whole $batch body and, wrapped by wrapOp,
// as one sub-request.
func FuzzDecode(f *testing.F) {
	for _, tc := range goldenCases {
		f.Add(tc.contentType, []byte(tc.body))
	}
	f.Add("multipart/mixed; boundary=b", []byte(crlf("--b", "Content-Type: multipart/mixed; boundary=cs", "",
		"--cs", "Content-Type: application/http", "Content-ID: 1", "",
		"DELETE /a/t HTTP/1.1", "X: a", "\tb", "Content-ID: ", "", "", "--cs--", "--b--", "")))
	f.Add("multipart/mixed; boundary=b", []byte("--b--\r\n"))
	f.Add("multipart/mixed", []byte("garbage"))
	// Sub-request texts, for the wrapped form.
	f.Add("", []byte(crlf("POST http://127.0.0.1:10002/devstoreaccount1/mytable"+goFormatQS+" HTTP/1.1",
		"Accept: application/json;odata=minimalmetadata", "Content-Length: 47", "Content-Type: application/json",
		"DataServiceVersion: ", "Prefer: return-no-content", "x-ms-version: ", "",
		`{"PartitionKey":"p1","RowKey":"r1","Age":23}`)))
	f.Add("", []byte(lf("MERGE /devstoreaccount1/t(PartitionKey='O''Brien%2C%20Jr',RowKey='caf\u00e9 x') HTTP/1.1",
		"Content-ID: 2", "if-match: *", "X-HTTP-Method: MERGE", " folded", "", "", `{"Name":"y"}`, "")))

	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		// The round trip re-encodes with the fuzz boundaries, so it is only
		// meaningful when the input does not hold them.
		roundTrip := !bytes.Contains(body, []byte(fuzzMarker1)) && !bytes.Contains(body, []byte(fuzzMarker2))
		checkDecode(t, contentType, body, roundTrip)
		checkDecode(t, ContentType(fuzzBatchB), wrapOp(body), roundTrip)
	})
}

func checkDecode(t *testing.T, contentType string, body []byte, roundTrip bool) {
	checkStrict(t, contentType, body, 100)
	checkStrict(t, contentType, body, 1)
	b, err := Decode(contentType, body, 100)
	if err != nil {
		e, ok := err.(*Error)
		if !ok {
			t.Fatalf("error %T is not an *Error: %v", err, err)
		}
		if e.Message == "" || e.Index < -1 || e.Index >= 100 || strings.ContainsAny(e.Message, "\r\n") {
			t.Fatalf("bad error %#v", e)
		}
		return
	}
	if b == nil || len(b.Requests) == 0 || len(b.Requests) > 100 || (!b.Changeset && len(b.Requests) != 1) {
		t.Fatalf("impossible batch %+v", b)
	}
	for i, r := range b.Requests {
		if r.Header == nil || r.Method == "" || r.Target == "" {
			t.Fatalf("request %d incomplete: %+v", i, r)
		}
	}
	if !roundTrip {
		return
	}
	enc := AppendRequest(nil, fuzzBatchB, fuzzChangesetB, b)
	b2, err := Decode(ContentType(fuzzBatchB), enc, 100)
	if err != nil {
		t.Fatalf("Decode(AppendRequest(Decode(x))): %v\nencoded: %q", err, enc)
	}
	if d := diffBatch(b2, b); d != "" {
		t.Fatalf("round trip changed the batch: %s\nencoded: %q", d, enc)
	}
	if enc2 := AppendRequest(nil, fuzzBatchB, fuzzChangesetB, b2); !bytes.Equal(enc, enc2) {
		t.Fatalf("second encoding differs:\n%q\n%q", enc, enc2)
	}
}

// TestRoundTripNearValid complements FuzzDecode, whose coverage-guided corpus
// drifts towards error paths: it applies small mutations that keep inputs
// mostly valid (line endings, whitespace, separators, control bytes, header
// lines) to the golden bodies and checks the same properties.
func TestRoundTripNearValid(t *testing.T) {
	tokens := []string{" ", "\t", "\r", "\n", "\r\n", ":", ";", "\x00", "\x7f", "é", "--", "'", "a",
		"Content-ID: 5\r\n", "\r\n\r\n", "\n\n", " HTTP/1.1", "X-A: \r\n", "\r\n\tfold"}
	rng := rand.New(rand.NewPCG(1, 2))
	n := 10000
	if testing.Short() {
		n = 2000
	}
	decoded := 0
	for i := 0; i < n; i++ {
		tc := goldenCases[rng.IntN(len(goldenCases))]
		body := []byte(tc.body)
		for m := 1 + rng.IntN(3); m > 0; m-- {
			pos := rng.IntN(len(body) + 1)
			switch rng.IntN(3) {
			case 0, 1:
				tok := tokens[rng.IntN(len(tokens))]
				body = append(body[:pos:pos], append([]byte(tok), body[pos:]...)...)
			case 2:
				end := min(len(body), pos+1+rng.IntN(3))
				body = append(body[:pos:pos], body[end:]...)
			}
		}
		if _, err := Decode(tc.contentType, body, 100); err == nil {
			decoded++
		}
		checkDecode(t, tc.contentType, body, true)
		if t.Failed() {
			t.Fatalf("input %q", body)
		}
	}
	if decoded < n/4 {
		t.Fatalf("only %d of %d mutated inputs decoded: the test no longer exercises the round trip", decoded, n)
	}
	t.Logf("%d of %d mutated inputs decoded", decoded, n)
}

// checkStrict: when decodeStrict decodes an input, decodeStd (the
// mime/multipart reference) decodes it to the same batch, exactly (nil
// and empty bodies and headers apart).
func checkStrict(t *testing.T, contentType string, body []byte, maxOps int) bool {
	t.Helper()
	mt, params := parseMediaType(contentType)
	if !strings.HasPrefix(mt, "multipart/") || !validBoundary(params["boundary"]) {
		return false
	}
	got, ok := decodeStrict(body, params["boundary"], maxOps)
	if !ok {
		return false
	}
	want, err := decodeStd(body, params["boundary"], maxOps)
	if err != nil {
		t.Fatalf("decodeStrict decoded what decodeStd rejects (%v): %q", err, body)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeStrict and decodeStd differ on %q:\n%+v\n%+v", body, got, want)
	}
	return true
}

// TestStrictTakesSDKBodies: the SDKs' changesets take the in-place path
// (else checkStrict would check nothing on them), and the layouts it
// leaves to mime/multipart do not.
func TestStrictTakesSDKBodies(t *testing.T) {
	want := map[string]bool{"go-sdk": true, "js-sdk": true, "legacy-lf": true, "java-quoted-contentid-keys": true, "go-sdk-lf": true,
		"retrieve": false, "old-js-missing-close": false}
	for _, tc := range goldenCases {
		if got := checkStrict(t, tc.contentType, []byte(tc.body), 100); got != want[tc.name] {
			t.Errorf("%s: decodeStrict ok = %v, want %v", tc.name, got, want[tc.name])
		}
	}
}
