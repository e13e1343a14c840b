package e2e

import (
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/partita/partita/internal/auth"
)

// TestWireSecondaryStatsPathStyle: the Python SDK's Get Service Stats
// against a path-style endpoint (http://host/devstoreaccount1) is
// GET /devstoreaccount1-secondary/devstoreaccount1/?restype=service&comp=stats,
// signed with SharedKey over /devstoreaccount1/devstoreaccount1/?comp=stats
// (the primary's path: the SDK signs before it moves the request to the
// secondary). partita answers it as the secondary's stats, checks the
// signature over that resource and no other, and refuses a write through
// the same path as any write through the secondary.
func TestWireSecondaryStatsPathStyle(t *testing.T) {
	s := StartServer(t, "")
	key, _ := base64.StdEncoding.DecodeString(devKey)
	do := func(method, path, signedPath, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		date := time.Now().UTC().Format(http.TimeFormat)
		req.Header.Set("x-ms-date", date)
		req.Header.Set("x-ms-version", "2019-02-02")
		ctype := ""
		if body != "" {
			ctype = "application/xml"
			req.Header.Set("Content-Type", ctype)
		}
		res := "/" + devAccount + signedPath
		if c := req.URL.Query().Get("comp"); c != "" {
			res += "?comp=" + c
		}
		req.Header.Set("Authorization", "SharedKey "+devAccount+":"+auth.Sign(key, auth.StringToSignFull(method, "", ctype, date, res)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const stats = "/" + devAccount + "-secondary/" + devAccount + "/?restype=service&comp=stats"

	code, body := do("GET", stats, "/"+devAccount+"/", "")
	if code != http.StatusOK || !strings.Contains(body, "<GeoReplication><Status>live</Status><LastSyncTime>") {
		t.Errorf("stats, path-style secondary, signed as the Python SDK does: %d %s, want 200 with live GeoReplication", code, body)
	}
	// The signature covers the SDK's resource only: one over the path as
	// sent does not authenticate this request.
	code, body = do("GET", stats, "/"+devAccount+"-secondary/"+devAccount+"/", "")
	if code != http.StatusForbidden || !strings.Contains(body, "<m:code>AuthenticationFailed</m:code>") {
		t.Errorf("stats signed over the path as sent: %d %s, want 403 AuthenticationFailed", code, body)
	}
	// A write through the same path is a write through the secondary.
	props := `<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><Cors><CorsRule><AllowedOrigins>https://a.example</AllowedOrigins><AllowedMethods>GET</AllowedMethods><MaxAgeInSeconds>5</MaxAgeInSeconds><ExposedHeaders></ExposedHeaders><AllowedHeaders></AllowedHeaders></CorsRule></Cors></StorageServiceProperties>`
	code, body = do("PUT", "/"+devAccount+"-secondary/"+devAccount+"/?restype=service&comp=properties", "/"+devAccount+"/", props)
	if code != http.StatusForbidden || !strings.Contains(body, "InsufficientAccountPermissions") {
		t.Errorf("set service properties through the path-style secondary: %d %s, want 403 InsufficientAccountPermissions", code, body)
	}
	code, body = do("GET", "/"+devAccount+"/?restype=service&comp=properties", "/"+devAccount+"/", "")
	if code != http.StatusOK || strings.Contains(body, "a.example") {
		t.Errorf("service properties after the refused write: %d %s", code, body)
	}
	// Only that form: without restype=service, or with another second
	// segment, the path is what it was (a table path with a '/', invalid).
	for _, path := range []string{
		"/" + devAccount + "-secondary/" + devAccount + "/?comp=stats",
		"/" + devAccount + "-secondary/other/?restype=service&comp=stats",
	} {
		if code, body := do("GET", path, path[:strings.IndexByte(path, '?')], ""); code != http.StatusBadRequest || !strings.Contains(body, "InvalidInput") {
			t.Errorf("GET %s: %d %s, want 400 InvalidInput", path, code, body)
		}
	}
}
