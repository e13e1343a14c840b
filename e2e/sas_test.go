package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/partita/partita/internal/wire"
)

// sasSpec describes a table SAS to build with the Go SDK's signer.
type sasSpec struct {
	table, perms    string
	start, expiry   time.Time
	protocol        aztables.SASProtocol
	ip              string
	id              string
	spk, srk        string
	epk, erk        string
	corruptSig      bool
	noSig, noExpiry bool
}

// build signs the SAS with the Go SDK. The SDK signs spk/srk/epk/erk but
// leaves them out of its query string (docs/COMPATIBILITY.md §10), so they are added
// here.
func (sp sasSpec) build(t *testing.T) string {
	t.Helper()
	cred, _ := aztables.NewSharedKeyCredential(devAccount, devKey)
	v := aztables.SASSignatureValues{
		Protocol: sp.protocol, StartTime: sp.start, ExpiryTime: sp.expiry, Permissions: sp.perms,
		Identifier: sp.id, TableName: sp.table,
		StartPartitionKey: sp.spk, StartRowKey: sp.srk, EndPartitionKey: sp.epk, EndRowKey: sp.erk,
	}
	if sp.ip != "" {
		v.IPRange = aztables.IPRange{Start: net.ParseIP(sp.ip)}
	}
	if v.Protocol == "" {
		v.Protocol = aztables.SASProtocolHTTPSandHTTP
	}
	if v.ExpiryTime.IsZero() && !sp.noExpiry {
		v.ExpiryTime = time.Now().Add(time.Hour)
	}
	q, err := v.Sign(cred)
	if err != nil {
		t.Fatal(err)
	}
	vals, _ := url.ParseQuery(q)
	for k, x := range map[string]string{"spk": sp.spk, "srk": sp.srk, "epk": sp.epk, "erk": sp.erk} {
		if x != "" {
			vals.Set(k, x)
		}
	}
	if sp.corruptSig {
		vals.Set("sig", "AAAA"+vals.Get("sig")[4:])
	}
	return vals.Encode()
}

func sasClient(t *testing.T, s *Server, table, sas string) *aztables.Client {
	t.Helper()
	u := s.Endpoint() + "/" + table
	if sas != "" {
		u += "?" + sas
	}
	c, err := aztables.NewClientWithNoCredential(u, &aztables.ClientOptions{ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func codeOf(err error) string {
	if err == nil {
		return "ok"
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return fmt.Sprintf("%d %s", re.StatusCode, re.ErrorCode)
	}
	return err.Error()
}

// TestSASMatrix runs every entity operation under every kind of SAS
// failure and checks the service's status and code, and that a refused
// operation changed nothing.
func TestSASMatrix(t *testing.T) {
	s := StartServer(t, "")
	svc := serviceClient(t, s)
	const tbl = "sastbl"
	if _, err := svc.CreateTable(ctx, tbl, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateTable(ctx, "othertbl", nil); err != nil {
		t.Fatal(err)
	}
	admin := svc.NewClient(tbl)
	seed := func(pk, rk string) {
		if _, err := admin.UpsertEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": pk, "RowKey": rk, "V": 0}), &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
	}
	// A stored access policy for the revocation case.
	if _, err := admin.SetAccessPolicy(ctx, &aztables.SetAccessPolicyOptions{TableACL: []*aztables.SignedIdentifier{{
		ID: to.Ptr("pol"), AccessPolicy: &aztables.AccessPolicy{Start: to.Ptr(time.Now().Add(-time.Hour)), Expiry: to.Ptr(time.Now().Add(time.Hour)), Permission: to.Ptr("raud")},
	}}}); err != nil {
		t.Fatal(err)
	}

	type op struct {
		name   string
		letter string // the permission letter(s) it needs
		run    func(c *aztables.Client, pk, rk string) error
	}
	ops := []op{
		{"Get", "r", func(c *aztables.Client, pk, rk string) error { _, err := c.GetEntity(ctx, pk, rk, nil); return err }},
		{"Query", "r", func(c *aztables.Client, pk, rk string) error {
			_, err := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq '" + pk + "'")}).NextPage(ctx)
			return err
		}},
		{"Insert", "a", func(c *aztables.Client, pk, rk string) error {
			_, err := c.AddEntity(ctx, mustJSONb(map[string]any{"PartitionKey": pk, "RowKey": rk + "new"}), nil)
			return err
		}},
		{"Update", "u", func(c *aztables.Client, pk, rk string) error {
			_, err := c.UpdateEntity(ctx, mustJSONb(map[string]any{"PartitionKey": pk, "RowKey": rk, "V": 1}), &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeMerge})
			return err
		}},
		{"Upsert", "au", func(c *aztables.Client, pk, rk string) error {
			_, err := c.UpsertEntity(ctx, mustJSONb(map[string]any{"PartitionKey": pk, "RowKey": rk, "V": 2}), nil)
			return err
		}},
		{"Delete", "d", func(c *aztables.Client, pk, rk string) error { _, err := c.DeleteEntity(ctx, pk, rk, nil); return err }},
		{"Batch", "a", func(c *aztables.Client, pk, rk string) error {
			_, err := c.SubmitTransaction(ctx, []aztables.TransactionAction{{ActionType: aztables.TransactionTypeAdd, Entity: mustJSONb(map[string]any{"PartitionKey": pk, "RowKey": rk + "b"})}}, nil)
			return err
		}},
	}
	lacking := func(letters string) string { // every permission but the op's
		out := ""
		for _, l := range "raud" {
			if !strings.ContainsRune(letters, l) {
				out += string(l)
			}
		}
		if letters == "au" {
			out = "ra" // upsert needs both a and u: a alone is not enough
		}
		return out
	}
	now := time.Now()
	cases := []struct {
		name string
		sas  func(o op) string
		pk   string
		want string
	}{
		{"no auth", func(op) string { return "" }, "b", "403 AuthenticationFailed"},
		{"bad signature", func(op) string { return sasSpec{table: tbl, perms: "raud", corruptSig: true}.build(t) }, "b", "403 AuthenticationFailed"},
		{"expired", func(op) string {
			return sasSpec{table: tbl, perms: "raud", start: now.Add(-2 * time.Hour), expiry: now.Add(-time.Hour)}.build(t)
		}, "b", "403 AuthenticationFailed"},
		{"not yet valid", func(op) string {
			return sasSpec{table: tbl, perms: "raud", start: now.Add(time.Hour), expiry: now.Add(2 * time.Hour)}.build(t)
		}, "b", "403 AuthenticationFailed"},
		{"wrong permission", func(o op) string { return sasSpec{table: tbl, perms: lacking(o.letter)}.build(t) }, "b", "403 AuthorizationPermissionMismatch"},
		{"outside key range", func(op) string { return sasSpec{table: tbl, perms: "raud", spk: "a", epk: "b"}.build(t) }, "d", "403 AuthorizationFailure"},
		{"wrong table", func(op) string { return sasSpec{table: "othertbl", perms: "raud"}.build(t) }, "b", "403 AuthorizationFailure"},
		{"wrong protocol", func(op) string {
			return sasSpec{table: tbl, perms: "raud", protocol: aztables.SASProtocolHTTPS}.build(t)
		}, "b", "403 AuthorizationProtocolMismatch"},
		{"wrong IP", func(op) string { return sasSpec{table: tbl, perms: "raud", ip: "10.1.2.3"}.build(t) }, "b", "403 AuthorizationSourceIPMismatch"},
		{"valid", func(op) string { return sasSpec{table: tbl, perms: "raud", spk: "a", epk: "c"}.build(t) }, "b", "ok"},
		{"policy", func(op) string { return sasSpec{table: tbl, id: "pol", noExpiry: true}.build(t) }, "b", "ok"},
	}
	n := 0
	for _, tc := range cases {
		for _, o := range ops {
			n++
			rk := fmt.Sprintf("r%03d", n)
			seed(tc.pk, rk)
			c := sasClient(t, s, tbl, tc.sas(o))
			err := o.run(c, tc.pk, rk)
			got := codeOf(err)
			want := tc.want
			if o.name == "Query" && tc.name == "outside key range" {
				want = "ok" // queries are clipped, not refused; checked below
			}
			if got != want {
				t.Errorf("%s / %s: %s, want %s", tc.name, o.name, got, want)
			}
			if want != "ok" {
				// A refused operation changed nothing.
				m, _ := getMap(t, admin, tc.pk, rk)
				if m["V"] != float64(0) {
					t.Errorf("%s / %s: refused but entity changed: %v", tc.name, o.name, m)
				}
				if _, err := admin.GetEntity(ctx, tc.pk, rk+"new", nil); err == nil {
					t.Errorf("%s / %s: refused insert was written", tc.name, o.name)
				}
			}
		}
	}
	// Revoking the policy revokes the tokens that use it.
	pol := sasSpec{table: tbl, id: "pol", noExpiry: true}.build(t)
	if _, err := sasClient(t, s, tbl, pol).GetEntity(ctx, "b", "r001", nil); err != nil {
		t.Fatalf("policy token before revocation: %v", err)
	}
	if _, err := admin.SetAccessPolicy(ctx, &aztables.SetAccessPolicyOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := sasClient(t, s, tbl, pol).GetEntity(ctx, "b", "r001", nil)
	if got := codeOf(err); got != "403 AuthenticationFailed" {
		t.Errorf("revoked policy: %s", got)
	}
}

// TestSASRangedQuery: a query through a key-ranged SAS over a table with
// rows inside and outside the range returns exactly the inside rows,
// across several pages.
func TestSASRangedQuery(t *testing.T) {
	s := StartServer(t, "")
	svc := serviceClient(t, s)
	if _, err := svc.CreateTable(ctx, "ranged", nil); err != nil {
		t.Fatal(err)
	}
	admin := svc.NewClient("ranged")
	for _, pk := range []string{"a", "b", "c", "d"} {
		for rk := 1; rk <= 5; rk++ {
			if _, err := admin.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": pk, "RowKey": fmt.Sprint(rk)}), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	sas := sasSpec{table: "ranged", perms: "r", spk: "b", srk: "2", epk: "c", erk: "3"}.build(t)
	c := sasClient(t, s, "ranged", sas)
	for _, filter := range []string{"", "RowKey ne '9'", "PartitionKey ge 'a'"} {
		o := &aztables.ListEntitiesOptions{Top: to.Ptr[int32](2)}
		if filter != "" {
			o.Filter = &filter
		}
		rows, pages := listAll(t, c, o)
		var got []string
		for _, r := range rows {
			got = append(got, r.PK+r.RK)
		}
		if strings.Join(got, ",") != "b2,b3,b4,b5,c1,c2,c3" {
			t.Errorf("filter %q: rows %v, want b2..c3", filter, got)
		}
		if pages < 4 {
			t.Errorf("filter %q: %d pages, want several", filter, pages)
		}
	}
	// Point reads outside the range are refused; inside are served.
	if _, err := c.GetEntity(ctx, "b", "1", nil); codeOf(err) != "403 AuthorizationFailure" {
		t.Errorf("get (b,1): %s", codeOf(err))
	}
	if _, err := c.GetEntity(ctx, "c", "3", nil); err != nil {
		t.Errorf("get (c,3): %v", err)
	}
}

// TestAccountSAS: service, resource-type and permission checks of account
// SAS tokens for table and entity operations.
func TestAccountSAS(t *testing.T) {
	s := StartServer(t, "")
	cred, _ := aztables.NewSharedKeyCredential(devAccount, devKey)
	mk := func(services, types, perms string) *aztables.ServiceClient {
		qp, err := aztables.AccountSASSignatureValues{Protocol: aztables.SASProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour),
			Permissions: perms, Services: services, ResourceTypes: types}.Sign(cred)
		if err != nil {
			t.Fatal(err)
		}
		c, err := aztables.NewServiceClientWithNoCredential(s.Endpoint()+"?"+qp.Encode(), &aztables.ClientOptions{ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	full := mk("t", "sco", "rwdlacu")
	if _, err := full.CreateTable(ctx, "acct", nil); err != nil {
		t.Fatalf("create table with account SAS: %v", err)
	}
	if _, err := full.NewClient("acct").AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "r"}), nil); err != nil {
		t.Fatalf("insert with account SAS: %v", err)
	}
	if _, err := full.GetProperties(ctx, nil); err != nil {
		t.Fatalf("get properties with account SAS: %v", err)
	}
	for _, tt := range []struct {
		name string
		c    *aztables.ServiceClient
		run  func(c *aztables.ServiceClient) error
		want string
	}{
		{"blob-only service", mk("b", "sco", "rwdlacu"), func(c *aztables.ServiceClient) error {
			_, err := c.NewClient("acct").GetEntity(ctx, "p", "r", nil)
			return err
		}, "403 AuthorizationServiceMismatch"},
		{"entity op without srt=o", mk("t", "sc", "rwdlacu"), func(c *aztables.ServiceClient) error {
			_, err := c.NewClient("acct").GetEntity(ctx, "p", "r", nil)
			return err
		}, "403 AuthorizationResourceTypeMismatch"},
		{"create table without srt=c", mk("t", "so", "rwdlacu"), func(c *aztables.ServiceClient) error {
			_, err := c.CreateTable(ctx, "nope", nil)
			return err
		}, "403 AuthorizationResourceTypeMismatch"},
		{"delete table without d", mk("t", "sco", "rwlacu"), func(c *aztables.ServiceClient) error {
			_, err := c.DeleteTable(ctx, "acct", nil)
			return err
		}, "403 AuthorizationPermissionMismatch"},
		{"list tables without l", mk("t", "sco", "rwdacu"), func(c *aztables.ServiceClient) error {
			_, err := c.NewListTablesPager(nil).NextPage(ctx)
			return err
		}, "403 AuthorizationPermissionMismatch"},
		{"insert without a", mk("t", "sco", "rwdlcu"), func(c *aztables.ServiceClient) error {
			_, err := c.NewClient("acct").AddEntity(ctx, mustJSONb(map[string]any{"PartitionKey": "p", "RowKey": "x"}), nil)
			return err
		}, "403 AuthorizationPermissionMismatch"},
		{"read-only can read", mk("t", "o", "r"), func(c *aztables.ServiceClient) error {
			_, err := c.NewClient("acct").GetEntity(ctx, "p", "r", nil)
			return err
		}, "ok"},
	} {
		if got := codeOf(tt.run(tt.c)); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}

// TestSASRefusesBeforeReadingTheBody checks that an entity write the SAS
// does not allow is refused as such even when its body is malformed: the
// permission follows from the method and If-Match, so the body is not read.
func TestSASRefusesBeforeReadingTheBody(t *testing.T) {
	s := StartServer(t, "")
	const tbl = "sasbody"
	if _, err := serviceClient(t, s).CreateTable(ctx, tbl, nil); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, sas, method, ifMatch, key, want string
	}{
		{"update without u", sasSpec{table: tbl, perms: "rad"}.build(t), "PUT", "*", "(PartitionKey='b',RowKey='r')", "403 AuthorizationPermissionMismatch"},
		{"merge without u", sasSpec{table: tbl, perms: "rad"}.build(t), "MERGE", "*", "(PartitionKey='b',RowKey='r')", "403 AuthorizationPermissionMismatch"},
		{"upsert without a", sasSpec{table: tbl, perms: "rud"}.build(t), "PUT", "", "(PartitionKey='b',RowKey='r')", "403 AuthorizationPermissionMismatch"},
		{"outside key range", sasSpec{table: tbl, perms: "raud", spk: "a", epk: "b"}.build(t), "PUT", "", "(PartitionKey='c',RowKey='r')", "403 AuthorizationFailure"},
		{"allowed", sasSpec{table: tbl, perms: "raud"}.build(t), "PUT", "", "(PartitionKey='b',RowKey='r')", "400 InvalidInput"},
	}
	for _, tc := range cases {
		req, err := http.NewRequest(tc.method, s.Endpoint()+"/"+tbl+tc.key+"?"+tc.sas, strings.NewReader(`{"V": not json`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-ms-version", "2019-02-02")
		if tc.ifMatch != "" {
			req.Header.Set("If-Match", tc.ifMatch)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("x-ms-error-code")); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestSASRangedQueryLongFilter: a filter long enough for the planner to
// coarsen its key ranges (to the hull of partition 'b' for a SAS ending
// at ('b','1')) still reads nothing outside the SAS's key range: no page
// names a continuation outside it, counts an entity outside it as
// examined, or finds one from a continuation crafted past its end. Each
// was a way to learn the keys beyond the range (the entities' bodies
// stayed hidden).
func TestSASRangedQueryLongFilter(t *testing.T) {
	s := StartServer(t, "")
	svc := serviceClient(t, s)
	if _, err := svc.CreateTable(ctx, "ranged", nil); err != nil {
		t.Fatal(err)
	}
	admin := svc.NewClient("ranged")
	for _, k := range [][2]string{{"a", "1"}, {"a", "2"}, {"b", "1"}, {"b", "2"}, {"b", "4"}, {"b", "5"}, {"b", "7"}, {"c", "1"}} {
		if _, err := admin.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": k[0], "RowKey": k[1]}), nil); err != nil {
			t.Fatal(err)
		}
	}
	var long strings.Builder
	long.WriteString("RowKey ne 'zz'")
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&long, " and RowKey ne 'zz%d'", i)
	}
	type page struct {
		rows             []string
		npk, nrk         string
		examined, status int
	}
	get := func(sas, npk, nrk string) page {
		t.Helper()
		q := sas + "&$top=1&$filter=" + url.QueryEscape(long.String())
		if npk != "" {
			q += "&NextPartitionKey=" + url.QueryEscape(wire.EncodeToken(npk)) + "&NextRowKey=" + url.QueryEscape(wire.EncodeToken(nrk))
		}
		req, _ := http.NewRequest("GET", s.Endpoint()+"/ranged()?"+q, nil)
		req.Header.Set("Accept", "application/json;odata=nometadata")
		req.Header.Set("x-ms-version", "2019-02-02")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p page
		p.status = resp.StatusCode
		var body struct {
			Value []struct{ PartitionKey, RowKey string } `json:"value"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("query: %d, body: %v", resp.StatusCode, err)
		}
		for _, v := range body.Value {
			p.rows = append(p.rows, v.PartitionKey+v.RowKey)
		}
		if tok := resp.Header.Get("x-ms-continuation-NextPartitionKey"); tok != "" {
			p.npk, _ = wire.DecodeToken(tok)
			p.nrk, _ = wire.DecodeToken(resp.Header.Get("x-ms-continuation-NextRowKey"))
		}
		p.examined, _ = strconv.Atoi(resp.Header.Get("x-partita-entities-examined"))
		return p
	}
	for _, tc := range []struct {
		name   string
		sas    string
		inside func(pk, rk string) bool
		want   string
		past   [2]string // a continuation outside the range: past its end, or before its start
		before bool      // past is before the start
	}{
		{"ends at (b,1)", sasSpec{table: "ranged", perms: "r", epk: "b", erk: "1"}.build(t),
			func(pk, rk string) bool { return pk < "b" || pk == "b" && rk <= "1" }, "a1,a2,b1", [2]string{"b", "2"}, false},
		{"starts at (b,5)", sasSpec{table: "ranged", perms: "r", spk: "b", srk: "5"}.build(t),
			func(pk, rk string) bool { return pk > "b" || pk == "b" && rk >= "5" }, "b5,b7,c1", [2]string{"a", "1"}, true},
	} {
		var got []string
		npk, nrk := "", ""
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatalf("%s: no end after 10 pages", tc.name)
			}
			p := get(tc.sas, npk, nrk)
			if p.status != http.StatusOK {
				t.Fatalf("%s: status %d", tc.name, p.status)
			}
			got = append(got, p.rows...)
			if p.examined > 1+len(p.rows) {
				t.Errorf("%s: a page of %d entities examined %d: it read outside the range", tc.name, len(p.rows), p.examined)
			}
			if p.npk == "" && p.nrk == "" {
				break
			}
			if !tc.inside(p.npk, p.nrk) {
				t.Errorf("%s: the continuation names (%s,%s), outside the range", tc.name, p.npk, p.nrk)
			}
			npk, nrk = p.npk, p.nrk
		}
		if strings.Join(got, ",") != tc.want {
			t.Errorf("%s: rows %v, want %s", tc.name, got, tc.want)
		}
		// A continuation crafted outside the range reads, counts and
		// names nothing outside it: past the end, nothing at all; before
		// the start, the range's first entity, as from no continuation.
		p := get(tc.sas, tc.past[0], tc.past[1])
		first, _, _ := strings.Cut(tc.want, ",")
		switch {
		case tc.before && (len(p.rows) != 1 || p.rows[0] != first || p.examined > 2 || !tc.inside(p.npk, p.nrk)):
			t.Errorf("%s: resumed at (%s,%s), before the start: rows %v, examined %d, next (%s,%s)", tc.name, tc.past[0], tc.past[1], p.rows, p.examined, p.npk, p.nrk)
		case !tc.before && (len(p.rows) != 0 || p.examined != 0 || p.npk != ""):
			t.Errorf("%s: resumed at (%s,%s), past the end: rows %v, examined %d, next (%s,%s)", tc.name, tc.past[0], tc.past[1], p.rows, p.examined, p.npk, p.nrk)
		}
	}
}
