package settings

import (
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// sdkServer answers the Go SDK's ACL, properties and stats calls with this
// package's encoders and records the bodies it sends.
type sdkServer struct {
	mu       sync.Mutex
	props    []byte // GET properties body
	acl      []byte // GET acl body
	lastSync time.Time
	got      map[string][]byte // "PUT properties" / "PUT acl" → body
}

func (s *sdkServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	h := w.Header()
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	h.Set("x-ms-version", "2019-02-02")
	h.Set("x-ms-request-id", "00000000-0000-0000-0000-000000000000")
	comp := r.URL.Query().Get("comp")
	switch r.Method + " " + comp {
	case "GET properties":
		h.Set("Content-Type", "application/xml")
		w.Write(s.props)
	case "GET acl":
		h.Set("Content-Type", "application/xml")
		w.Write(s.acl)
	case "GET stats":
		h.Set("Content-Type", "application/xml")
		w.Write(AppendServiceStats(nil, s.lastSync))
	case "PUT properties":
		s.got["PUT properties"] = body
		w.WriteHeader(http.StatusAccepted)
	case "PUT acl":
		s.got["PUT acl"] = body
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotImplemented)
	}
}

func newSDKServer(t *testing.T) (*sdkServer, *aztables.ServiceClient) {
	t.Helper()
	s := &sdkServer{got: map[string][]byte{}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	svc, err := aztables.NewServiceClientWithNoCredential(srv.URL+"/devstoreaccount1", nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, svc
}

// The Go SDK parses what AppendServiceProperties writes, and what it sends
// on SetProperties decodes to the same values.
func TestSDK_ServiceProperties(t *testing.T) {
	s, svc := newSDKServer(t)
	ctx := context.Background()
	p := ServiceProperties{
		Logging:       &Logging{Version: "1.0", Read: true, Delete: true, Retention: RetentionPolicy{Enabled: true, Days: ptr(5)}},
		HourMetrics:   &Metrics{Version: "1.0", Enabled: true, IncludeAPIs: ptr(true), Retention: RetentionPolicy{Enabled: true, Days: ptr(7)}},
		MinuteMetrics: &Metrics{Version: "1.0"},
		Cors: []CorsRule{
			{AllowedOrigins: "https://a.example", AllowedMethods: "GET,PUT", AllowedHeaders: "x-ms-meta*", ExposedHeaders: "", MaxAgeInSeconds: 500},
			{AllowedOrigins: "*", AllowedMethods: "MERGE", AllowedHeaders: "*", ExposedHeaders: "x-ms-*", MaxAgeInSeconds: 0},
		},
	}
	s.props = AppendServiceProperties(nil, p)
	resp, err := svc.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := aztables.ServiceProperties{
		Logging: &aztables.Logging{Version: to.Ptr("1.0"), Read: to.Ptr(true), Write: to.Ptr(false), Delete: to.Ptr(true),
			RetentionPolicy: &aztables.RetentionPolicy{Enabled: to.Ptr(true), Days: to.Ptr(int32(5))}},
		HourMetrics: &aztables.Metrics{Version: to.Ptr("1.0"), Enabled: to.Ptr(true), IncludeAPIs: to.Ptr(true),
			RetentionPolicy: &aztables.RetentionPolicy{Enabled: to.Ptr(true), Days: to.Ptr(int32(7))}},
		MinuteMetrics: &aztables.Metrics{Version: to.Ptr("1.0"), Enabled: to.Ptr(false),
			RetentionPolicy: &aztables.RetentionPolicy{Enabled: to.Ptr(false)}},
		Cors: []*aztables.CorsRule{
			{AllowedOrigins: to.Ptr("https://a.example"), AllowedMethods: to.Ptr("GET,PUT"), AllowedHeaders: to.Ptr("x-ms-meta*"), ExposedHeaders: to.Ptr(""), MaxAgeInSeconds: to.Ptr(int32(500))},
			{AllowedOrigins: to.Ptr("*"), AllowedMethods: to.Ptr("MERGE"), AllowedHeaders: to.Ptr("*"), ExposedHeaders: to.Ptr("x-ms-*"), MaxAgeInSeconds: to.Ptr(int32(0))},
		},
	}
	if !reflect.DeepEqual(resp.ServiceProperties, want) {
		t.Errorf("SDK GetProperties =\n%s\nwant\n%s", dump(resp.ServiceProperties), dump(want))
	}

	// Defaults too.
	s.props = AppendServiceProperties(nil, DefaultServiceProperties())
	resp, err = svc.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l := resp.Logging; l == nil || *l.Read || *l.Version != "1.0" || resp.HourMetrics.IncludeAPIs != nil || len(resp.Cors) != 0 {
		t.Errorf("SDK GetProperties(defaults) = %s", dump(resp.ServiceProperties))
	}

	// The SDK's Set body (its own element order) decodes to p; sections it
	// leaves out stay nil.
	if _, err := svc.SetProperties(ctx, want, nil); err != nil {
		t.Fatal(err)
	}
	got, err := DecodeServiceProperties(s.got["PUT properties"])
	if err != nil {
		t.Fatalf("DecodeServiceProperties(SDK body %s) = %v", s.got["PUT properties"], err)
	}
	if !reflect.DeepEqual(got, p) {
		t.Errorf("decoded SDK Set =\n%+v\nwant\n%+v\nbody %s", got, p, s.got["PUT properties"])
	}
	if _, err := svc.SetProperties(ctx, aztables.ServiceProperties{MinuteMetrics: want.HourMetrics}, nil); err != nil {
		t.Fatal(err)
	}
	got, err = DecodeServiceProperties(s.got["PUT properties"])
	if err != nil || got.Logging != nil || got.HourMetrics != nil || got.Cors != nil || !reflect.DeepEqual(got.MinuteMetrics, p.HourMetrics) {
		t.Errorf("decoded partial SDK Set = %+v, %v (body %s)", got, err, s.got["PUT properties"])
	}

	// The SDK's exported model unmarshals the bytes directly as well.
	var direct aztables.ServiceProperties
	if err := xml.Unmarshal(AppendServiceProperties(nil, p), &direct); err != nil || !reflect.DeepEqual(direct, want) {
		t.Errorf("xml.Unmarshal into aztables.ServiceProperties = %s, %v", dump(direct), err)
	}
}

func TestSDK_AccessPolicy(t *testing.T) {
	s, svc := newSDKServer(t)
	ctx := context.Background()
	c := svc.NewClient("mytable")
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	expiry := time.Date(2024, 12, 31, 23, 59, 59, 123456700, time.UTC)
	ids := []SignedIdentifier{
		{ID: "empty"},
		{ID: "partial", Policy: &AccessPolicy{Permission: "ra"}},
		{ID: "full", Policy: &AccessPolicy{Start: start.Format(policyTimeFormat), Expiry: expiry.Format(policyTimeFormat), Permission: "raud"}},
	}
	s.acl = AppendACL(nil, ids)
	resp, err := c.GetAccessPolicy(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []*aztables.SignedIdentifier{
		{ID: to.Ptr("empty")},
		{ID: to.Ptr("partial"), AccessPolicy: &aztables.AccessPolicy{Permission: to.Ptr("ra")}},
		{ID: to.Ptr("full"), AccessPolicy: &aztables.AccessPolicy{Start: &start, Expiry: &expiry, Permission: to.Ptr("raud")}},
	}
	if len(resp.SignedIdentifiers) != len(want) {
		t.Fatalf("SDK GetAccessPolicy = %s", dump(resp.SignedIdentifiers))
	}
	for i, got := range resp.SignedIdentifiers {
		w := want[i]
		if *got.ID != *w.ID || (got.AccessPolicy == nil) != (w.AccessPolicy == nil) {
			t.Errorf("identifier %d = %s, want %s", i, dump(got), dump(w))
			continue
		}
		if g, w := got.AccessPolicy, w.AccessPolicy; g != nil {
			if !eqPtr(g.Permission, w.Permission) || !eqTime(g.Start, w.Start) || !eqTime(g.Expiry, w.Expiry) {
				t.Errorf("identifier %d policy = %s, want %s", i, dump(g), dump(w))
			}
		}
	}

	// No policies: the SDK sees none.
	s.acl = AppendACL(nil, nil)
	resp, err = c.GetAccessPolicy(ctx, nil)
	if err != nil || len(resp.SignedIdentifiers) != 0 {
		t.Errorf("SDK GetAccessPolicy(none) = %s, %v", dump(resp.SignedIdentifiers), err)
	}

	// The SDK's Set body decodes to ids (times normalized).
	if _, err := c.SetAccessPolicy(ctx, &aztables.SetAccessPolicyOptions{TableACL: want}); err != nil {
		t.Fatal(err)
	}
	got, err := DecodeACL(s.got["PUT acl"])
	if err != nil || !reflect.DeepEqual(got, ids) {
		t.Errorf("decoded SDK Set ACL = %+v, %v; want %+v (body %s)", got, err, ids, s.got["PUT acl"])
	}
	// SetAccessPolicy(nil) sends no body: no policies.
	if _, err := c.SetAccessPolicy(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeACL(s.got["PUT acl"]); err != nil || got != nil {
		t.Errorf("decoded empty SDK Set ACL = %+v, %v (body %q)", got, err, s.got["PUT acl"])
	}
}

func TestSDK_Statistics(t *testing.T) {
	s, svc := newSDKServer(t)
	s.lastSync = time.Date(2024, 1, 2, 3, 0, 0, 0, time.UTC)
	resp, err := svc.GetStatistics(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	g := resp.GeoReplication
	if g == nil || g.Status == nil || *g.Status != aztables.GeoReplicationStatusLive || g.LastSyncTime == nil || !g.LastSyncTime.Equal(s.lastSync) {
		t.Errorf("SDK GetStatistics = %s", dump(resp))
	}
	s.lastSync = time.Time{}
	if resp, err = svc.GetStatistics(context.Background(), nil); err != nil || resp.GeoReplication == nil {
		t.Errorf("SDK GetStatistics(no sync time) = %s, %v", dump(resp), err)
	}
}

func eqPtr[T comparable](a, b *T) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func eqTime(a, b *time.Time) bool { return (a == nil) == (b == nil) && (a == nil || a.Equal(*b)) }

func dump(v any) string {
	b, err := xml.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
