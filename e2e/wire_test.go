package e2e

// Wire details where the service's documented behaviour is easy to miss
// (issue #18): percent-encoded resource paths, Boolean literals in
// $filter, $top=0, and the Vary/Access-Control-Allow-Origin table of the
// CORS documentation. Raw HTTP, signed with SharedKeyLite over the path
// exactly as sent.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// tableName is the name newTable gave c.
func tableName(c *aztables.Client) string {
	tableNamesMu.Lock()
	defer tableNamesMu.Unlock()
	return tableNames[c]
}

// values decodes a query response's "value" array.
func values(t *testing.T, body string) []map[string]any {
	t.Helper()
	var v struct{ Value []map[string]any }
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.Value == nil {
		t.Fatalf("not a query response: %v: %s", err, body)
	}
	return v.Value
}

// rowKeys lists the RowKeys of a query response, in order.
func rowKeys(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	for _, e := range values(t, body) {
		out = append(out, fmt.Sprint(e["RowKey"]))
	}
	return out
}

func TestWirePercentEncodedPaths(t *testing.T) {
	s := StartServer(t, "")
	svc := serviceClient(t, s)
	c := newTable(t, svc)
	tbl := tableName(c)
	ctx := context.Background()
	for _, k := range [][2]string{{"p", "r"}, {"O'Brien (x)", "a b,c"}, {"p", "gone"}} {
		if _, err := c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": k[0], "RowKey": k[1], "V": 1}), nil); err != nil {
			t.Fatal(err)
		}
	}
	base := "/" + devAccount + "/"
	// netURL is the path Go's net/url sends for a url.URL built from the
	// literal form: '(', ')', '\'' and ' ' escaped.
	netURL := func(p string) string { return (&url.URL{Path: base + p}).EscapedPath() }
	if got := netURL("t(PartitionKey='a')"); got != base+"t%28PartitionKey=%27a%27%29" {
		t.Fatalf("net/url escapes the literal form as %s; the test's premise changed", got)
	}

	t.Run("GetEntity", func(t *testing.T) {
		for _, path := range []string{
			base + tbl + "(PartitionKey='p',RowKey='r')",
			netURL(tbl + "(PartitionKey='p',RowKey='r')"),
			base + tbl + "%28PartitionKey%3D%27p%27%2CRowKey%3D%27r%27%29",
			base + tbl + "%28PartitionKey%3d%27p%27%2cRowKey%3d%27r%27%29",
			base + tbl + "%28PartitionKey='p',RowKey='r')",
			netURL(tbl + "(PartitionKey='O''Brien (x)',RowKey='a b,c')"),
		} {
			st, _, body := rawDo(t, s, "GET", path, "", nil)
			if st != 200 || !strings.Contains(body, `"PartitionKey":"p"`) && !strings.Contains(body, `"PartitionKey":"O'Brien (x)"`) {
				t.Errorf("GET %s: %d %s", path, st, body)
			}
		}
		// A missing entity is still ResourceNotFound, not TableNotFound.
		st, h, body := rawDo(t, s, "GET", netURL(tbl+"(PartitionKey='p',RowKey='none')"), "", nil)
		if st != 404 || h.Get("x-ms-error-code") != "ResourceNotFound" {
			t.Errorf("GET of a missing entity, encoded: %d %s %s", st, h.Get("x-ms-error-code"), body)
		}
	})

	t.Run("Tables and query paths", func(t *testing.T) {
		for _, path := range []string{netURL("Tables('" + tbl + "')"), base + "Tables%28%27" + tbl + "%27%29", base + "Tables%28'" + tbl + "'%29"} {
			st, _, body := rawDo(t, s, "GET", path, "", nil)
			if st != 200 || !strings.Contains(body, `"TableName":"`+tbl+`"`) {
				t.Errorf("GET %s: %d %s", path, st, body)
			}
		}
		for _, path := range []string{netURL(tbl + "()"), base + tbl + "%28%29", base + "Tables%28%29"} {
			if st, _, body := rawDo(t, s, "GET", path, "", nil); st != 200 {
				t.Errorf("GET %s: %d %s", path, st, body)
			}
		}
	})

	t.Run("writes", func(t *testing.T) {
		path := netURL(tbl + "(PartitionKey='p',RowKey='r')")
		if st, _, body := rawDo(t, s, "PUT", path, `{"V":2}`, nil); st != 204 {
			t.Fatalf("PUT %s: %d %s", path, st, body)
		}
		if st, _, body := rawDo(t, s, "MERGE", path, `{"W":3}`, nil); st != 204 {
			t.Fatalf("MERGE %s: %d %s", path, st, body)
		}
		e, err := c.GetEntity(ctx, "p", "r", nil)
		if err != nil || !strings.Contains(string(e.Value), `"V":2`) || !strings.Contains(string(e.Value), `"W":3`) {
			t.Fatalf("after PUT and MERGE on the encoded path: %s, %v", e.Value, err)
		}
		del := base + tbl + "%28PartitionKey%3D%27p%27,RowKey%3D%27gone%27%29"
		if st, _, body := rawDo(t, s, "DELETE", del, "", map[string]string{"If-Match": "*"}); st != 204 {
			t.Fatalf("DELETE %s: %d %s", del, st, body)
		}
		var re *azcore.ResponseError
		if _, err := c.GetEntity(ctx, "p", "gone", nil); !errors.As(err, &re) || re.StatusCode != 404 {
			t.Fatalf("entity deleted through the encoded path still readable: %v", err)
		}
	})

	t.Run("batch sub-request URLs", func(t *testing.T) {
		sub := func(method, target, body string) string {
			return strings.Join([]string{
				"--cs", "Content-Type: application/http", "Content-Transfer-Encoding: binary", "",
				method + " " + target + " HTTP/1.1",
				"Content-Type: application/json", "Accept: application/json;odata=minimalmetadata", "",
				body, "",
			}, "\r\n")
		}
		// Without If-Match, PUT and MERGE insert or replace/merge.
		abs := s.URL + netURL(tbl+"(PartitionKey='b',RowKey='3 (three)')")
		body := strings.Join([]string{
			"--batch", "Content-Type: multipart/mixed; boundary=cs", "",
			sub("POST", s.URL+base+url.PathEscape(tbl)+"%28%29", `{"PartitionKey":"b","RowKey":"1","V":1}`) +
				sub("PUT", s.URL+base+tbl+"%28PartitionKey%3d%27b%27%2cRowKey%3d%272%27%29", `{"V":2}`) +
				sub("MERGE", abs, `{"W":1}`) +
				"--cs--", "--batch--", "",
		}, "\r\n")
		st, _, resp := rawDo(t, s, "POST", base+"%24batch", body, map[string]string{"Content-Type": "multipart/mixed; boundary=batch"})
		if st != 202 || strings.Contains(resp, `"odata.error"`) {
			t.Fatalf("batch with encoded sub-request URLs: %d %s", st, resp)
		}
		for _, rk := range []string{"1", "2", "3 (three)"} {
			if _, err := c.GetEntity(ctx, "b", rk, nil); err != nil {
				t.Errorf("entity (b,%s) written by the batch: %v", rk, err)
			}
		}
	})

	t.Run("signing covers the path as sent", func(t *testing.T) {
		// Signed over the literal form, sent in the encoded one: the
		// canonical resource is the path as sent, so this must not verify.
		sent := netURL(tbl + "(PartitionKey='b',RowKey='1')")
		req, err := http.NewRequest("GET", s.URL+sent, nil)
		if err != nil {
			t.Fatal(err)
		}
		signLite(req, base+tbl+"(PartitionKey='b',RowKey='1')")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 || resp.Header.Get("x-ms-error-code") != "AuthenticationFailed" {
			t.Errorf("request signed over another form of its path: %d %s, want 403 AuthenticationFailed", resp.StatusCode, resp.Header.Get("x-ms-error-code"))
		}
	})
}

func TestWireFilterBooleanLiterals(t *testing.T) {
	s := StartServer(t, "")
	svc := serviceClient(t, s)
	c := newTable(t, svc)
	ctx := context.Background()
	for _, k := range [][2]string{{"p", "1"}, {"p", "2"}, {"q", "1"}} {
		if _, err := c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": k[0], "RowKey": k[1]}), nil); err != nil {
			t.Fatal(err)
		}
	}
	q := func(f string) string {
		return "/" + devAccount + "/" + tableName(c) + "()?$filter=" + url.QueryEscape(f)
	}
	for _, tt := range []struct {
		filter, want, class string
	}{
		{"false", "", "point"},
		{"true", "1 2 1", "table"},
		{"FALSE or RowKey eq '2'", "2", "table"},
		{"(true and RowKey eq '1') and (false or PartitionKey eq 'p')", "1", "point"},
		{"not false and PartitionKey eq 'q'", "1", "partition"},
		{"PartitionKey eq 'p' and false", "", "point"},
	} {
		st, h, body := rawDo(t, s, "GET", q(tt.filter), "", nil)
		if st != 200 {
			t.Errorf("$filter=%s: %d %s", tt.filter, st, body)
			continue
		}
		if got := strings.Join(rowKeys(t, body), " "); got != tt.want {
			t.Errorf("$filter=%s: RowKeys %q, want %q", tt.filter, got, tt.want)
		}
		if got := h.Get("x-partita-query-class"); got != tt.class {
			t.Errorf("$filter=%s: query class %s, want %s", tt.filter, got, tt.class)
		}
	}
	// $filter=false on a missing table is still TableNotFound.
	st, h, _ := rawDo(t, s, "GET", "/"+devAccount+"/nosuchtable()?$filter=false", "", nil)
	if st != 404 || h.Get("x-ms-error-code") != "TableNotFound" {
		t.Errorf("$filter=false on a missing table: %d %s", st, h.Get("x-ms-error-code"))
	}
	// Query Tables.
	for _, tt := range []struct {
		filter string
		want   bool
	}{
		{"false", false},
		{"true", true},
		{"true and TableName eq '" + tableName(c) + "'", true},
		{"false or TableName eq 'other'", false},
	} {
		st, _, body := rawDo(t, s, "GET", "/"+devAccount+"/Tables?$filter="+url.QueryEscape(tt.filter), "", nil)
		if st != 200 {
			t.Errorf("Query Tables $filter=%s: %d %s", tt.filter, st, body)
			continue
		}
		if got := strings.Contains(body, `"TableName":"`+tableName(c)+`"`); got != tt.want || !tt.want && len(values(t, body)) != 0 {
			t.Errorf("Query Tables $filter=%s: %s", tt.filter, body)
		}
	}
	// The SDK's own query path.
	pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr("true and PartitionKey eq 'p'")})
	n := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Entities)
	}
	if n != 2 {
		t.Errorf("SDK query with a Boolean literal: %d entities, want 2", n)
	}
}

func TestWireTopZero(t *testing.T) {
	s := StartServer(t, "")
	svc := serviceClient(t, s)
	c := newTable(t, svc)
	if _, err := c.AddEntity(context.Background(), mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "1"}), nil); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		"/" + devAccount + "/" + tableName(c) + "()?$top=0",
		"/" + devAccount + "/" + tableName(c) + "()?$top=0&$filter=PartitionKey%20eq%20'p'",
		"/" + devAccount + "/Tables?$top=0",
	} {
		st, h, body := rawDo(t, s, "GET", path, "", nil)
		if st != 200 || len(values(t, body)) != 0 {
			t.Errorf("GET %s: %d %s, want 200 with no entities", path, st, body)
		}
		for _, k := range []string{"x-ms-continuation-NextPartitionKey", "x-ms-continuation-NextTableName"} {
			if h.Get(k) != "" {
				t.Errorf("GET %s: %s %q", path, k, h.Get(k))
			}
		}
	}
	// $top=0 still checks the rest of the request.
	for _, tt := range []struct{ path, code string }{
		{"/" + devAccount + "/nosuchtable()?$top=0", "TableNotFound"},
		{"/" + devAccount + "/" + tableName(c) + "()?$top=0&$filter=A%20eq", "InvalidInput"},
		{"/" + devAccount + "/" + tableName(c) + "()?$top=-1", "InvalidInput"},
		{"/" + devAccount + "/" + tableName(c) + "()?$top=1001", "InvalidInput"},
	} {
		if _, h, body := rawDo(t, s, "GET", tt.path, "", nil); h.Get("x-ms-error-code") != tt.code {
			t.Errorf("GET %s: %s %s, want %s", tt.path, h.Get("x-ms-error-code"), body, tt.code)
		}
	}
}

// TestWireCORSVary checks every row of the service's table of when
// Vary: Origin and Access-Control-Allow-Origin are set on actual requests.
func TestWireCORSVary(t *testing.T) {
	s := StartServer(t, "")
	svc := serviceClient(t, s)
	c := newTable(t, svc)
	ctx := context.Background()
	if _, err := c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "1"}), nil); err != nil {
		t.Fatal(err)
	}
	path := "/" + devAccount + "/" + tableName(c) + "(PartitionKey='p',RowKey='1')"
	type want struct{ vary, allowOrigin, expose, creds string }
	check := func(t *testing.T, what, method, origin string, w want) {
		t.Helper()
		hdr := map[string]string{}
		if origin != "" {
			hdr["Origin"] = origin
		}
		body := ""
		if method == "PUT" {
			body = `{"V":1}`
		}
		st, h, body := rawDo(t, s, method, path, body, hdr)
		if st >= 300 {
			t.Fatalf("%s: %d %s", what, st, body)
		}
		got := want{strings.Join(h.Values("Vary"), ","), h.Get("Access-Control-Allow-Origin"), h.Get("Access-Control-Expose-Headers"), h.Get("Access-Control-Allow-Credentials")}
		if got != w {
			t.Errorf("%s: got Vary=%q Allow-Origin=%q Expose-Headers=%q Allow-Credentials=%q, want %+v", what, got.vary, got.allowOrigin, got.expose, got.creds, w)
		}
	}
	// No rules: nothing, with or without an Origin.
	check(t, "no rules, no Origin", "GET", "", want{})
	check(t, "no rules, Origin", "GET", "https://app.example", want{})

	_, err := svc.SetProperties(ctx, aztables.ServiceProperties{Cors: []*aztables.CorsRule{
		{AllowedOrigins: to.Ptr("https://app.example"), AllowedMethods: to.Ptr("GET"), AllowedHeaders: to.Ptr("*"), ExposedHeaders: to.Ptr("x-ms-request-id"), MaxAgeInSeconds: to.Ptr[int32](60)},
		{AllowedOrigins: to.Ptr("*"), AllowedMethods: to.Ptr("PUT"), AllowedHeaders: to.Ptr("*"), ExposedHeaders: to.Ptr("x-ms-*"), MaxAgeInSeconds: to.Ptr[int32](60)},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "rules, no Origin, no * rule for the method", "GET", "", want{vary: "Origin"})
	// The rule's "x-ms-*" reaches the browser as the names it matches: a
	// browser would take "x-ms-*" for the name of one header.
	const xms = "x-ms-client-request-id,x-ms-continuation-NextPartitionKey,x-ms-continuation-NextRowKey,x-ms-continuation-NextTableName,x-ms-error-code,x-ms-request-id,x-ms-version"
	check(t, "rules, no Origin, a * rule for the method", "PUT", "", want{allowOrigin: "*", expose: xms})
	check(t, "rules, Origin matching a rule", "GET", "https://app.example", want{vary: "Origin", allowOrigin: "https://app.example", expose: "x-ms-request-id", creds: "true"})
	check(t, "rules, Origin matching no rule", "GET", "https://evil.example", want{vary: "Origin"})
	check(t, "rules, Origin under a * rule", "PUT", "https://anyone.example", want{allowOrigin: "*", expose: xms})
}
