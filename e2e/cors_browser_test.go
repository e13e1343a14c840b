package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// TestBrowserCORS: a browser app on another origin uses partita with a
// table SAS, under the account's usual CORS rule (ExposedHeaders
// "x-ms-*,ETag"), in headless Chromium (test/browser/cors.test.mjs). The
// page follows a $top=2 query's x-ms-continuation-* headers to read every
// entity, writes with headers that force a preflight and uses the ETag it
// reads for conditional MERGE and DELETE, and reads x-ms-error-code from a
// refused write; a second app's page, under a rule exposing "*", does the
// same with credentials (fetch's credentials: 'include'); a page on an
// origin the rules do not name can neither read nor write. Before
// 2026-11-27 partita sent the rule's "x-ms-*" (and "*") as is in
// Access-Control-Expose-Headers, which Chromium takes for the name of one
// header (always for "x-ms-*", with credentials for "*"): the page saw no
// continuation and its query ended after page one without an error.
//
// Setup as TestConsole (browserTools). The pages are served by this test on
// two loopback ports of their own, so each is another origin than partita's.
func TestBrowserCORS(t *testing.T) {
	dir, node, chromium := browserTools(t)

	page := func() *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			fmt.Fprint(w, "<!doctype html><title>a browser app</title><p>a page on another origin</p>")
		}))
		t.Cleanup(s.Close)
		return s
	}
	app, cookieApp, stranger := page(), page(), page()

	s := StartServer(t, "")
	svc := serviceClient(t, s)
	ctx := context.Background()
	tc := newTable(t, svc)
	table := tableName(tc)

	// Two partitions, so that $top=2 pages cross a partition boundary.
	keys := [][2]string{{"p1", "r1"}, {"p1", "r2"}, {"p1", "r3"}, {"p2", "r1"}, {"p2", "r2"}}
	for i, k := range keys {
		body := fmt.Sprintf(`{"PartitionKey":%q,"RowKey":%q,"N":%d}`, k[0], k[1], i)
		if _, err := tc.AddEntity(ctx, []byte(body), nil); err != nil {
			t.Fatalf("AddEntity %v: %v", k, err)
		}
	}
	if _, err := svc.SetProperties(ctx, aztables.ServiceProperties{Cors: []*aztables.CorsRule{{
		AllowedOrigins:  to.Ptr(app.URL),
		AllowedMethods:  to.Ptr("GET,PUT,MERGE,DELETE,POST,OPTIONS"),
		AllowedHeaders:  to.Ptr("x-ms-*,content-type,accept,dataserviceversion,maxdataserviceversion,if-match,prefer"),
		ExposedHeaders:  to.Ptr("x-ms-*,ETag"),
		MaxAgeInSeconds: to.Ptr[int32](60),
	}, {
		AllowedOrigins:  to.Ptr(cookieApp.URL),
		AllowedMethods:  to.Ptr("GET,PUT"),
		AllowedHeaders:  to.Ptr("*"),
		ExposedHeaders:  to.Ptr("*"),
		MaxAgeInSeconds: to.Ptr[int32](60),
	}}}, nil); err != nil {
		t.Fatalf("SetProperties: %v", err)
	}
	sas := sasSpec{table: table, perms: "raud"}.build(t)

	var env []string
	for _, kv := range jsEnv(s.URL, "") {
		if !strings.HasPrefix(kv, "NODE_EXTRA_CA_CERTS=") && !strings.HasPrefix(kv, "PARTITA_CHROMIUM=") && !strings.HasPrefix(kv, "PARTITA_CORS_") {
			env = append(env, kv)
		}
	}
	env = append(env, "PARTITA_CHROMIUM="+chromium,
		"PARTITA_CORS_TABLE="+table, "PARTITA_CORS_SAS="+sas,
		"PARTITA_CORS_APP="+app.URL, "PARTITA_CORS_COOKIE_APP="+cookieApp.URL, "PARTITA_CORS_STRANGER="+stranger.URL,
		"PARTITA_CORS_COUNT="+strconv.Itoa(len(keys)))
	t.Logf("partita %s, the app's page %s, the credentialed app's %s, a stranger's %s", s.URL, app.URL, cookieApp.URL, stranger.URL)
	runSuite(t, suiteRun{name: "node --test cors.test.mjs", max: 2 * time.Minute, dir: dir, env: env,
		argv: []string{node, "--test", "--test-reporter=spec", "--test-timeout=90000", "cors.test.mjs"}})

	// What the pages did, as the server has it: the apps' entities, the first's with its
	// MERGE applied, its scratch entity deleted, and nothing from the
	// stranger's page (its preflight failed, so its PUT was never sent).
	if _, err := tc.GetEntity(ctx, "p9", "with-credentials", nil); err != nil {
		t.Errorf("the credentialed app's entity: %v", err)
	}
	got, err := tc.GetEntity(ctx, "p9", "from-page", nil)
	if err != nil {
		t.Fatalf("the app's entity: %v", err)
	}
	for _, want := range []string{`"Written":"by the page"`, `"Merged":"with If-Match"`} {
		if !strings.Contains(string(got.Value), want) {
			t.Errorf("the app's entity %s lacks %s", got.Value, want)
		}
	}
	for _, rk := range []string{"scratch", "stranger"} {
		_, err := tc.GetEntity(ctx, "p9", rk, nil)
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusNotFound {
			t.Errorf("entity p9/%s: %v, want 404", rk, err)
		}
	}
}
