package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/partita/partita/internal/auth"
)

// TestGetEntityContentLength: over a real connection, a Get Entity's
// response carries a Content-Length equal to its body and is not chunked,
// for a small entity (net/http sets the length: writeJSON leaves it to it)
// and for one past autoLengthMax (writeJSON sets it).
func TestGetEntityContentLength(t *testing.T) {
	s := obsServer(t, Options{})
	ts := httptest.NewServer(s)
	defer ts.Close()
	wantStatus(t, do(t, s, "POST", "", "/Tables", nil, []byte(`{"TableName":"lengths"}`)), http.StatusCreated)
	for _, size := range []int{10, autoLengthMax - 200, autoLengthMax, 5000, 30_000} {
		rk := fmt.Sprint("r", size)
		body := fmt.Sprintf(`{"PartitionKey":"p","RowKey":%q,"Pad":%q}`, rk, strings.Repeat("x", size))
		wantStatus(t, do(t, s, "POST", "", "/lengths", map[string]string{"Prefer": "return-no-content"}, []byte(body)), http.StatusNoContent)

		path := fmt.Sprintf("/devstoreaccount1/lengths(PartitionKey='p',RowKey='%s')", rk)
		r, _ := http.NewRequest("GET", ts.URL+path, nil)
		date := time.Now().UTC().Format(http.TimeFormat)
		r.Header.Set("x-ms-date", date)
		r.Header.Set("Accept", "application/json;odata=minimalmetadata")
		kr, _ := auth.ParseAccounts("devstoreaccount1:" + testKey)
		r.Header.Set("Authorization", "SharedKeyLite devstoreaccount1:"+auth.Sign(kr["devstoreaccount1"].Keys[0], auth.StringToSignLite(date, "/devstoreaccount1"+path)))
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(got), `"Pad":"x`) {
			t.Fatalf("pad %d: %d %.200s", size, resp.StatusCode, got)
		}
		if resp.ContentLength != int64(len(got)) || len(resp.TransferEncoding) != 0 || resp.Header.Get("Content-Length") == "" {
			t.Errorf("pad %d: Content-Length %d (header %q), transfer encoding %v, body %d bytes", size, resp.ContentLength, resp.Header.Get("Content-Length"), resp.TransferEncoding, len(got))
		}
	}
}

// TestHeaderNamesCanonical: the header names set straight into a response's
// map are in the form http.Header.Set would give them, so Get finds them
// and the wire spelling is what it was.
func TestHeaderNamesCanonical(t *testing.T) {
	for _, h := range []string{hdrETag, hdrRequestID, hdrVersion, hdrClientReqID, hdrQueryClass, hdrExamined,
		hdrPreferenceApplied, hdrLocation, hdrDataServiceID} {
		if c := http.CanonicalHeaderKey(h); c != h {
			t.Errorf("%q is not canonical (%q)", h, c)
		}
	}
	if http.CanonicalHeaderKey("DataServiceId") != hdrDataServiceID {
		t.Errorf("DataServiceId's canonical form is %q", http.CanonicalHeaderKey("DataServiceId"))
	}
}
