package settings

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

// Bodies the real service returned (from the Go SDK's recorded tests
// against a real account, 2021, without the leading byte-order mark).
const (
	// GET ?comp=acl after setting "empty" (no policy), "partial" (only
	// Permission) and "full" with times sent as 2021-06-08T02:10:09Z.
	realACL = `<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers>` +
		`<SignedIdentifier><Id>empty</Id></SignedIdentifier>` +
		`<SignedIdentifier><Id>partial</Id><AccessPolicy><Permission>r</Permission></AccessPolicy></SignedIdentifier>` +
		`<SignedIdentifier><Id>full</Id><AccessPolicy><Start>2021-06-08T02:10:09.0000000Z</Start><Expiry>2021-06-08T02:10:09.0000000Z</Expiry><Permission>r</Permission></AccessPolicy></SignedIdentifier>` +
		`</SignedIdentifiers>`
	// The Go SDK's PUT body for that (its element order).
	sdkACLRequest = `<SignedIdentifiers><SignedIdentifier><Id>empty</Id></SignedIdentifier>` +
		`<SignedIdentifier><AccessPolicy><Permission>r</Permission></AccessPolicy><Id>partial</Id></SignedIdentifier>` +
		`<SignedIdentifier><AccessPolicy><Permission>r</Permission><Expiry>2021-06-08T02:10:09Z</Expiry><Start>2021-06-08T02:10:09Z</Start></AccessPolicy><Id>full</Id></SignedIdentifier></SignedIdentifiers>`

	// GET ?restype=service&comp=properties.
	realProperties = `<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties>` +
		`<Logging><Version>1.0</Version><Read>false</Read><Write>true</Write><Delete>false</Delete><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></Logging>` +
		`<HourMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>true</IncludeAPIs><RetentionPolicy><Enabled>true</Enabled><Days>7</Days></RetentionPolicy></HourMetrics>` +
		`<MinuteMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>true</IncludeAPIs><RetentionPolicy><Enabled>true</Enabled><Days>5</Days></RetentionPolicy></MinuteMetrics>` +
		`<Cors /></StorageServiceProperties>`
	// The Go SDK's PUT body setting only CORS, and the real GET after it
	// (the other sections had been set before).
	sdkSetCors = `<StorageServiceProperties><Cors><CorsRule><AllowedHeaders>x-ms-meta-data*</AllowedHeaders><AllowedMethods>PUT</AllowedMethods>` +
		`<AllowedOrigins>www.xyz.com</AllowedOrigins><ExposedHeaders>x-ms-meta-source*</ExposedHeaders><MaxAgeInSeconds>500</MaxAgeInSeconds></CorsRule></Cors></StorageServiceProperties>`
	realAfterSetCors = `<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties>` +
		`<Logging><Version>1.0</Version><Read>true</Read><Write>true</Write><Delete>true</Delete><RetentionPolicy><Enabled>true</Enabled><Days>5</Days></RetentionPolicy></Logging>` +
		`<HourMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>true</IncludeAPIs><RetentionPolicy><Enabled>true</Enabled><Days>5</Days></RetentionPolicy></HourMetrics>` +
		`<MinuteMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>true</IncludeAPIs><RetentionPolicy><Enabled>true</Enabled><Days>5</Days></RetentionPolicy></MinuteMetrics>` +
		`<Cors><CorsRule><AllowedMethods>PUT</AllowedMethods><AllowedOrigins>www.xyz.com</AllowedOrigins><AllowedHeaders>x-ms-meta-data*</AllowedHeaders><ExposedHeaders>x-ms-meta-source*</ExposedHeaders><MaxAgeInSeconds>500</MaxAgeInSeconds></CorsRule></Cors>` +
		`</StorageServiceProperties>`
	// Go SDK PUT bodies the real service rejected with 400 InvalidXmlDocument.
	sdkRetentionTooLong = `<StorageServiceProperties><MinuteMetrics><Enabled>true</Enabled><IncludeAPIs>true</IncludeAPIs><RetentionPolicy><Enabled>true</Enabled><Days>366</Days></RetentionPolicy><Version>1.0</Version></MinuteMetrics></StorageServiceProperties>`
)

func sdkTooManyCors() string {
	rule := `<CorsRule><AllowedHeaders>x-ms-meta-data*</AllowedHeaders><AllowedMethods>PUT</AllowedMethods><AllowedOrigins>www.xyz.com</AllowedOrigins><ExposedHeaders>x-ms-meta-source*</ExposedHeaders><MaxAgeInSeconds>500</MaxAgeInSeconds></CorsRule>`
	return `<StorageServiceProperties><Cors>` + strings.Repeat(rule, 6) + `</Cors></StorageServiceProperties>`
}

func sdkTooManyIdentifiers() string {
	id := `<SignedIdentifier><AccessPolicy><Permission>r</Permission><Expiry>2029-01-01T00:00:00Z</Expiry><Start>2020-01-01T00:00:00Z</Start></AccessPolicy><Id>5</Id></SignedIdentifier>`
	return `<SignedIdentifiers>` + strings.Repeat(id, 6) + `</SignedIdentifiers>`
}

func TestACL_RealService(t *testing.T) {
	ids, err := DecodeACL([]byte(sdkACLRequest))
	if err != nil {
		t.Fatal(err)
	}
	want := []SignedIdentifier{
		{ID: "empty"},
		{ID: "partial", Policy: &AccessPolicy{Permission: "r"}},
		{ID: "full", Policy: &AccessPolicy{Start: "2021-06-08T02:10:09.0000000Z", Expiry: "2021-06-08T02:10:09.0000000Z", Permission: "r"}},
	}
	if !reflect.DeepEqual(ids, want) {
		t.Fatalf("DecodeACL = %+v, want %+v", ids, want)
	}
	if got := string(AppendACL(nil, ids)); got != realACL {
		t.Errorf("AppendACL =\n%s\nwant (real service)\n%s", got, realACL)
	}
	// The real response, BOM and all, decodes to the same.
	ids2, err := DecodeACL([]byte("\uFEFF" + realACL))
	if err != nil || !reflect.DeepEqual(ids2, want) {
		t.Errorf("DecodeACL(real) = %+v, %v", ids2, err)
	}
	if _, err := DecodeACL([]byte(sdkTooManyIdentifiers())); !errors.Is(err, ErrTooManyIdentifiers) || !errors.Is(err, ErrInvalidXML) {
		t.Errorf("six identifiers: %v, want ErrTooManyIdentifiers and ErrInvalidXML", err)
	}
}

func TestACL_Golden(t *testing.T) {
	for _, tt := range []struct {
		name string
		ids  []SignedIdentifier
		want string
	}{
		{"none", nil, `<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers />`},
		{"empty slice", []SignedIdentifier{}, `<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers />`},
		{"empty policy", []SignedIdentifier{{ID: "x", Policy: &AccessPolicy{}}},
			`<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers><SignedIdentifier><Id>x</Id></SignedIdentifier></SignedIdentifiers>`},
		{"nil policy", []SignedIdentifier{{ID: "x"}},
			`<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers><SignedIdentifier><Id>x</Id></SignedIdentifier></SignedIdentifiers>`},
		{"escaped", []SignedIdentifier{{ID: `a<b&"c"`, Policy: &AccessPolicy{Expiry: "2024-12-31T00:00:00.0000000Z"}}},
			`<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers><SignedIdentifier><Id>a&lt;b&amp;&#34;c&#34;</Id><AccessPolicy><Expiry>2024-12-31T00:00:00.0000000Z</Expiry></AccessPolicy></SignedIdentifier></SignedIdentifiers>`},
	} {
		if got := string(AppendACL(nil, tt.ids)); got != tt.want {
			t.Errorf("%s: AppendACL =\n%s\nwant\n%s", tt.name, got, tt.want)
		}
	}
	// AppendACL appends.
	if got := string(AppendACL([]byte("x"), nil)); !strings.HasPrefix(got, "x<?xml") {
		t.Errorf("AppendACL does not append: %q", got)
	}
}

func TestDecodeACL(t *testing.T) {
	long := strings.Repeat("i", 64)
	for _, tt := range []struct {
		name, body string
		want       []SignedIdentifier
		err        error
	}{
		{"empty body", "", nil, nil},
		{"blank body", " \r\n\t", nil, nil},
		{"bom only", "\uFEFF", nil, nil},
		{"self-closing", `<SignedIdentifiers/>`, nil, nil},
		{"declared empty", `<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers></SignedIdentifiers>`, nil, nil},
		{"pretty", "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<SignedIdentifiers>\n  <SignedIdentifier>\n    <Id>readers2024</Id>\n    <AccessPolicy>\n      <Start>2024-01-01T00:00:00.0000000Z</Start>\n      <Expiry>2024-12-31T00:00:00.0000000Z</Expiry>\n      <Permission>r</Permission>\n    </AccessPolicy>\n  </SignedIdentifier>\n</SignedIdentifiers>\n",
			[]SignedIdentifier{{ID: "readers2024", Policy: &AccessPolicy{Start: "2024-01-01T00:00:00.0000000Z", Expiry: "2024-12-31T00:00:00.0000000Z", Permission: "r"}}}, nil},
		{"empty AccessPolicy", `<SignedIdentifiers><SignedIdentifier><Id>a</Id><AccessPolicy/></SignedIdentifier></SignedIdentifiers>`,
			[]SignedIdentifier{{ID: "a"}}, nil},
		{"empty fields", `<SignedIdentifiers><SignedIdentifier><Id>a</Id><AccessPolicy><Start></Start><Expiry> </Expiry><Permission/></AccessPolicy></SignedIdentifier></SignedIdentifiers>`,
			[]SignedIdentifier{{ID: "a"}}, nil},
		{"time forms", `<SignedIdentifiers><SignedIdentifier><Id>a</Id><AccessPolicy><Start>2024-01-01T10:00:00.123456789+02:00</Start><Expiry>2024-02-01</Expiry></AccessPolicy></SignedIdentifier>` +
			`<SignedIdentifier><Id>b</Id><AccessPolicy><Start>2024-01-01T10:00Z</Start><Expiry>2024-01-01T10:00:00.5</Expiry></AccessPolicy></SignedIdentifier></SignedIdentifiers>`,
			[]SignedIdentifier{
				{ID: "a", Policy: &AccessPolicy{Start: "2024-01-01T08:00:00.1234567Z", Expiry: "2024-02-01T00:00:00.0000000Z"}},
				{ID: "b", Policy: &AccessPolicy{Start: "2024-01-01T10:00:00.0000000Z", Expiry: "2024-01-01T10:00:00.5000000Z"}},
			}, nil},
		{"permission order", `<SignedIdentifiers><SignedIdentifier><Id>a</Id><AccessPolicy><Permission>duar</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`,
			[]SignedIdentifier{{ID: "a", Policy: &AccessPolicy{Permission: "raud"}}}, nil},
		{"permission repeated", `<SignedIdentifiers><SignedIdentifier><Id>a</Id><AccessPolicy><Permission> rr </Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`,
			[]SignedIdentifier{{ID: "a", Policy: &AccessPolicy{Permission: "r"}}}, nil},
		{"namespace and comments", `<SignedIdentifiers xmlns="urn:x"><!-- c --><SignedIdentifier><Id>a</Id></SignedIdentifier></SignedIdentifiers><!-- c -->`,
			[]SignedIdentifier{{ID: "a"}}, nil},
		{"64 chars", `<SignedIdentifiers><SignedIdentifier><Id>` + long + `</Id></SignedIdentifier></SignedIdentifiers>`,
			[]SignedIdentifier{{ID: long}}, nil},
		{"five", `<SignedIdentifiers>` + strings.Repeat(`<SignedIdentifier><Id>a</Id></SignedIdentifier>`, 5) + `</SignedIdentifiers>`,
			[]SignedIdentifier{{ID: "a"}, {ID: "a"}, {ID: "a"}, {ID: "a"}, {ID: "a"}}, nil},

		{"six", `<SignedIdentifiers>` + strings.Repeat(`<SignedIdentifier><Id>a</Id></SignedIdentifier>`, 6) + `</SignedIdentifiers>`, nil, ErrTooManyIdentifiers},
		{"65 chars", `<SignedIdentifiers><SignedIdentifier><Id>` + long + `i</Id></SignedIdentifier></SignedIdentifiers>`, nil, ErrInvalidIdentifier},
		{"64 chars utf16", `<SignedIdentifiers><SignedIdentifier><Id>` + strings.Repeat("i", 63) + "\U0001F600" + `</Id></SignedIdentifier></SignedIdentifiers>`, nil, ErrInvalidIdentifier},
		{"no Id", `<SignedIdentifiers><SignedIdentifier><AccessPolicy><Expiry>2042-01-01T01:01:01.000000001Z</Expiry></AccessPolicy></SignedIdentifier></SignedIdentifiers>`, nil, ErrInvalidIdentifier},
		{"empty Id", `<SignedIdentifiers><SignedIdentifier><Id></Id></SignedIdentifier></SignedIdentifiers>`, nil, ErrInvalidIdentifier},
		{"bad time", `<SignedIdentifiers><SignedIdentifier><Id>a</Id><AccessPolicy><Start>yesterday</Start></AccessPolicy></SignedIdentifier></SignedIdentifiers>`, nil, ErrInvalidValue},
		{"year out of range", `<SignedIdentifiers><SignedIdentifier><Id>a</Id><AccessPolicy><Start>0001-01-01T00:00:00+01:00</Start></AccessPolicy></SignedIdentifier></SignedIdentifiers>`, nil, ErrInvalidValue},
		{"bad permission", `<SignedIdentifiers><SignedIdentifier><Id>a</Id><AccessPolicy><Permission>rw</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`, nil, ErrInvalidValue},
		{"wrong root", `<SignedIdentifier><Id>a</Id></SignedIdentifier>`, nil, ErrInvalidXML},
		// Unknown or misplaced elements: skipping them could set fewer
		// policies than the client sent (none, for a wrapper).
		{"wrapper around identifiers", `<SignedIdentifiers><Wrap><SignedIdentifier><Id>a</Id></SignedIdentifier></Wrap></SignedIdentifiers>`, nil, ErrInvalidXML},
		{"unknown element in root", `<SignedIdentifiers><Extra/><SignedIdentifier><Id>a</Id></SignedIdentifier></SignedIdentifiers>`, nil, ErrInvalidXML},
		{"unknown element in identifier", `<SignedIdentifiers><SignedIdentifier><Id>a</Id><Other>1</Other></SignedIdentifier></SignedIdentifiers>`, nil, ErrInvalidXML},
		{"wrapper around policy fields", `<SignedIdentifiers><SignedIdentifier><Id>a</Id><AccessPolicy><X><Permission>r</Permission></X></AccessPolicy></SignedIdentifier></SignedIdentifiers>`, nil, ErrInvalidXML},
		{"element inside Id", `<SignedIdentifiers><SignedIdentifier><Id>a<b/></Id></SignedIdentifier></SignedIdentifiers>`, nil, ErrInvalidXML},
		{"Id twice", `<SignedIdentifiers><SignedIdentifier><Id>a</Id><Id>b</Id></SignedIdentifier></SignedIdentifiers>`, nil, ErrInvalidXML},
		{"Permission twice", `<SignedIdentifiers><SignedIdentifier><Id>a</Id><AccessPolicy><Permission>r</Permission><Permission>d</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`, nil, ErrInvalidXML},
		{"text in container", `<SignedIdentifiers>junk<SignedIdentifier><Id>a</Id></SignedIdentifier></SignedIdentifiers>`, nil, ErrInvalidXML},
		{"malformed", `<SignedIdentifiers><SignedIdentifier>`, nil, ErrInvalidXML},
		{"not xml", `{"a":1}`, nil, ErrInvalidXML},
		{"trailing element", `<SignedIdentifiers/><SignedIdentifiers/>`, nil, ErrInvalidXML},
		{"trailing text", `<SignedIdentifiers/>x`, nil, ErrInvalidXML},
		{"utf-16 declared", `<?xml version="1.0" encoding="utf-16"?><SignedIdentifiers/>`, nil, ErrInvalidXML},
	} {
		got, err := DecodeACL([]byte(tt.body))
		if tt.err != nil {
			var xe *XMLError
			if !errors.Is(err, tt.err) || !errors.Is(err, ErrInvalidXML) || !errors.As(err, &xe) || xe.Reason == "" {
				t.Errorf("%s: DecodeACL = %v, want %v (an *XMLError matching ErrInvalidXML)", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: DecodeACL = %+v, %v; want %+v", tt.name, got, err, tt.want)
			continue
		}
		checkACLRoundTrip(t, got)
	}
}

func checkACLRoundTrip(t *testing.T, ids []SignedIdentifier) {
	t.Helper()
	b := AppendACL(nil, ids)
	again, err := DecodeACL(b)
	if err != nil || !reflect.DeepEqual(again, ids) {
		t.Fatalf("decode(append(%+v)) = %+v, %v\n%s", ids, again, err, b)
	}
	if b2 := AppendACL(nil, again); !bytes.Equal(b, b2) {
		t.Fatalf("append not stable:\n%s\n%s", b, b2)
	}
	stored, err := UnmarshalACL(MarshalACL(ids))
	if err != nil || !reflect.DeepEqual(stored, ids) {
		t.Fatalf("UnmarshalACL(MarshalACL(%+v)) = %+v, %v", ids, stored, err)
	}
}

func TestMarshalACL_NoLimits(t *testing.T) {
	// Stored values read back even past the Set limits.
	ids := make([]SignedIdentifier, 7)
	for i := range ids {
		ids[i] = SignedIdentifier{ID: fmt.Sprint(i), Policy: &AccessPolicy{Permission: "d"}}
	}
	got, err := UnmarshalACL(MarshalACL(ids))
	if err != nil || !reflect.DeepEqual(got, ids) {
		t.Errorf("UnmarshalACL = %+v, %v", got, err)
	}
	if got, err := UnmarshalACL(nil); got != nil || err != nil {
		t.Errorf("UnmarshalACL(nil) = %v, %v", got, err)
	}
	if _, err := UnmarshalACL([]byte("<x")); !errors.Is(err, ErrInvalidXML) {
		t.Errorf("UnmarshalACL(garbage) = %v", err)
	}
}

const defaultPropertiesXML = `<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties>` +
	`<Logging><Version>1.0</Version><Read>false</Read><Write>false</Write><Delete>false</Delete><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></Logging>` +
	`<HourMetrics><Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></HourMetrics>` +
	`<MinuteMetrics><Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></MinuteMetrics>` +
	`<Cors /></StorageServiceProperties>`

func TestDefaultServiceProperties(t *testing.T) {
	p := DefaultServiceProperties()
	if got := string(AppendServiceProperties(nil, p)); got != defaultPropertiesXML {
		t.Errorf("default properties =\n%s\nwant\n%s", got, defaultPropertiesXML)
	}
	checkPropertiesRoundTrip(t, p)
	// Fresh values each call.
	q := DefaultServiceProperties()
	q.Logging.Read = true
	if DefaultServiceProperties().Logging.Read {
		t.Error("DefaultServiceProperties shares state")
	}
}

func TestServiceProperties_RealService(t *testing.T) {
	// The real GET body decodes and re-encodes byte for byte.
	p, err := DecodeServiceProperties([]byte("\uFEFF" + realProperties))
	if err != nil {
		t.Fatal(err)
	}
	want := ServiceProperties{
		Logging:       &Logging{Version: "1.0", Write: true},
		HourMetrics:   &Metrics{Version: "1.0", Enabled: true, IncludeAPIs: ptr(true), Retention: RetentionPolicy{Enabled: true, Days: ptr(7)}},
		MinuteMetrics: &Metrics{Version: "1.0", Enabled: true, IncludeAPIs: ptr(true), Retention: RetentionPolicy{Enabled: true, Days: ptr(5)}},
		Cors:          []CorsRule{},
	}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("decoded %+v, want %+v", p, want)
	}
	if got := string(AppendServiceProperties(nil, p)); got != realProperties {
		t.Errorf("AppendServiceProperties =\n%s\nwant (real service)\n%s", got, realProperties)
	}

	// A Set of only Cors keeps the other sections (partial update).
	cur := ServiceProperties{
		Logging:       &Logging{Version: "1.0", Read: true, Write: true, Delete: true, Retention: RetentionPolicy{Enabled: true, Days: ptr(5)}},
		HourMetrics:   &Metrics{Version: "1.0", Enabled: true, IncludeAPIs: ptr(true), Retention: RetentionPolicy{Enabled: true, Days: ptr(5)}},
		MinuteMetrics: &Metrics{Version: "1.0", Enabled: true, IncludeAPIs: ptr(true), Retention: RetentionPolicy{Enabled: true, Days: ptr(5)}},
		Cors:          []CorsRule{},
	}
	upd, err := DecodeServiceProperties([]byte(sdkSetCors))
	if err != nil {
		t.Fatal(err)
	}
	if upd.Logging != nil || upd.HourMetrics != nil || upd.MinuteMetrics != nil || len(upd.Cors) != 1 {
		t.Fatalf("decoded Set = %+v", upd)
	}
	cur.Merge(upd)
	if got := string(AppendServiceProperties(nil, cur)); got != realAfterSetCors {
		t.Errorf("after Set Cors =\n%s\nwant (real service)\n%s", got, realAfterSetCors)
	}

	for _, tt := range []struct {
		body string
		err  error
	}{{sdkRetentionTooLong, ErrInvalidRetention}, {sdkTooManyCors(), ErrTooManyCorsRules}} {
		if _, err := DecodeServiceProperties([]byte(tt.body)); !errors.Is(err, tt.err) || !errors.Is(err, ErrInvalidXML) {
			t.Errorf("DecodeServiceProperties(%.60s…) = %v, want %v", tt.body, err, tt.err)
		}
	}
}

// A service properties document as the service returns it (pretty-printed, Logging in the Go SDK's
// order).
const protocolExample = `<?xml version="1.0" encoding="utf-8"?>
<StorageServiceProperties>
  <Logging>
    <Version>1.0</Version>
    <Delete>false</Delete>
    <Read>false</Read>
    <Write>false</Write>
    <RetentionPolicy><Enabled>false</Enabled></RetentionPolicy>
  </Logging>
  <HourMetrics>
    <Version>1.0</Version>
    <Enabled>true</Enabled>
    <IncludeAPIs>true</IncludeAPIs>
    <RetentionPolicy><Enabled>true</Enabled><Days>7</Days></RetentionPolicy>
  </HourMetrics>
  <MinuteMetrics>
    <Version>1.0</Version>
    <Enabled>false</Enabled>
    <RetentionPolicy><Enabled>false</Enabled></RetentionPolicy>
  </MinuteMetrics>
  <Cors>
    <CorsRule>
      <AllowedOrigins>http://localhost:3000,https://contoso.example</AllowedOrigins>
      <AllowedMethods>GET,PUT,POST,MERGE,DELETE,OPTIONS</AllowedMethods>
      <MaxAgeInSeconds>3600</MaxAgeInSeconds>
      <ExposedHeaders>x-ms-*</ExposedHeaders>
      <AllowedHeaders>*</AllowedHeaders>
    </CorsRule>
  </Cors>
</StorageServiceProperties>`

func TestServiceProperties_ProtocolExample(t *testing.T) {
	p, err := DecodeServiceProperties([]byte(protocolExample))
	if err != nil {
		t.Fatal(err)
	}
	want := ServiceProperties{
		Logging:       &Logging{Version: "1.0"},
		HourMetrics:   &Metrics{Version: "1.0", Enabled: true, IncludeAPIs: ptr(true), Retention: RetentionPolicy{Enabled: true, Days: ptr(7)}},
		MinuteMetrics: &Metrics{Version: "1.0"},
		Cors: []CorsRule{{AllowedOrigins: "http://localhost:3000,https://contoso.example", AllowedMethods: "GET,PUT,POST,MERGE,DELETE,OPTIONS",
			AllowedHeaders: "*", ExposedHeaders: "x-ms-*", MaxAgeInSeconds: 3600}},
	}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("decoded %+v, want %+v", p, want)
	}
	checkPropertiesRoundTrip(t, p)
}

func checkPropertiesRoundTrip(t *testing.T, p ServiceProperties) {
	t.Helper()
	b := AppendServiceProperties(nil, p)
	again, err := DecodeServiceProperties(b)
	if err != nil || !reflect.DeepEqual(again, p) {
		t.Fatalf("decode(append(%+v)) = %+v, %v\n%s", p, again, err, b)
	}
	if b2 := AppendServiceProperties(nil, again); !bytes.Equal(b, b2) {
		t.Fatalf("append not stable:\n%s\n%s", b, b2)
	}
	stored, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var back ServiceProperties
	if err := back.UnmarshalBinary(stored); err != nil || !reflect.DeepEqual(back, p) {
		t.Fatalf("UnmarshalBinary(MarshalBinary(%+v)) = %+v, %v", p, back, err)
	}
}

func TestDecodeServiceProperties(t *testing.T) {
	doc := func(inner string) string { return `<StorageServiceProperties>` + inner + `</StorageServiceProperties>` }
	rule := func(inner string) string { return doc(`<Cors><CorsRule>` + inner + `</CorsRule></Cors>`) }
	okRule := `<AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET</AllowedMethods><MaxAgeInSeconds>0</MaxAgeInSeconds>`
	retention := func(section, r string) string {
		return doc(`<` + section + `><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>false</IncludeAPIs>` + r + `</` + section + `>`)
	}
	for _, tt := range []struct {
		name, body string
		want       *ServiceProperties
		err        error
	}{
		{"nothing", doc(``), &ServiceProperties{}, nil},
		{"empty cors clears", doc(`<Cors/>`), &ServiceProperties{Cors: []CorsRule{}}, nil},
		{"lenient logging", doc(`<Logging><Read>1</Read></Logging>`), &ServiceProperties{Logging: &Logging{Version: "1.0", Read: true}}, nil},
		{"metrics enabled without IncludeAPIs", doc(`<HourMetrics><Enabled> true </Enabled></HourMetrics>`),
			&ServiceProperties{HourMetrics: &Metrics{Version: "1.0", Enabled: true, IncludeAPIs: ptr(false)}}, nil},
		{"metrics disabled drops IncludeAPIs", doc(`<MinuteMetrics><Version>2.0</Version><Enabled>0</Enabled><IncludeAPIs>true</IncludeAPIs></MinuteMetrics>`),
			&ServiceProperties{MinuteMetrics: &Metrics{Version: "2.0"}}, nil},
		{"days 1", retention("HourMetrics", `<RetentionPolicy><Enabled>true</Enabled><Days>1</Days></RetentionPolicy>`),
			&ServiceProperties{HourMetrics: &Metrics{Version: "1.0", Enabled: true, IncludeAPIs: ptr(false), Retention: RetentionPolicy{Enabled: true, Days: ptr(1)}}}, nil},
		{"days 365", retention("MinuteMetrics", `<RetentionPolicy><Enabled>true</Enabled><Days>365</Days></RetentionPolicy>`),
			&ServiceProperties{MinuteMetrics: &Metrics{Version: "1.0", Enabled: true, IncludeAPIs: ptr(false), Retention: RetentionPolicy{Enabled: true, Days: ptr(365)}}}, nil},
		{"cors rule minimal", rule(okRule), &ServiceProperties{Cors: []CorsRule{{AllowedOrigins: "*", AllowedMethods: "GET"}}}, nil},
		{"cors all methods", rule(`<AllowedOrigins>https://a.example, https://b.example</AllowedOrigins><AllowedMethods>delete,GET,HEAD,MERGE,POST,OPTIONS,PUT,PATCH</AllowedMethods><MaxAgeInSeconds>10</MaxAgeInSeconds><AllowedHeaders></AllowedHeaders><ExposedHeaders>x-ms-meta-*,x-ms-request-id</ExposedHeaders>`),
			&ServiceProperties{Cors: []CorsRule{{AllowedOrigins: "https://a.example, https://b.example", AllowedMethods: "delete,GET,HEAD,MERGE,POST,OPTIONS,PUT,PATCH",
				ExposedHeaders: "x-ms-meta-*,x-ms-request-id", MaxAgeInSeconds: 10}}}, nil},
		{"five rules", doc(`<Cors>` + strings.Repeat(`<CorsRule>`+okRule+`</CorsRule>`, 5) + `</Cors>`),
			&ServiceProperties{Cors: []CorsRule{{AllowedOrigins: "*", AllowedMethods: "GET"}, {AllowedOrigins: "*", AllowedMethods: "GET"}, {AllowedOrigins: "*", AllowedMethods: "GET"}, {AllowedOrigins: "*", AllowedMethods: "GET"}, {AllowedOrigins: "*", AllowedMethods: "GET"}}}, nil},
		{"unknown elements", doc(`<DefaultServiceVersion>2019-02-02</DefaultServiceVersion><StaticWebsite/>`), &ServiceProperties{}, nil},

		{"empty body", ``, nil, ErrInvalidXML},
		{"blank body", "\uFEFF \n", nil, ErrInvalidXML},
		{"malformed", `<StorageServiceProperties><Logging>`, nil, ErrInvalidXML},
		{"wrong root", `<ServiceProperties/>`, nil, ErrInvalidXML},
		{"trailing", doc(``) + `<x/>`, nil, ErrInvalidXML},
		{"bad bool", doc(`<Logging><Read>yes</Read></Logging>`), nil, ErrInvalidValue},
		{"bad IncludeAPIs", doc(`<HourMetrics><Enabled>false</Enabled><IncludeAPIs>maybe</IncludeAPIs></HourMetrics>`), nil, ErrInvalidValue},
		{"bad days", retention("HourMetrics", `<RetentionPolicy><Enabled>true</Enabled><Days>seven</Days></RetentionPolicy>`), nil, ErrInvalidValue},
		{"days 0", retention("HourMetrics", `<RetentionPolicy><Enabled>true</Enabled><Days>0</Days></RetentionPolicy>`), nil, ErrInvalidRetention},
		{"days 366", retention("MinuteMetrics", `<RetentionPolicy><Enabled>true</Enabled><Days>366</Days></RetentionPolicy>`), nil, ErrInvalidRetention},
		{"days missing", doc(`<Logging><RetentionPolicy><Enabled>true</Enabled></RetentionPolicy></Logging>`), nil, ErrInvalidRetention},
		{"days while disabled", doc(`<Logging><RetentionPolicy><Enabled>false</Enabled><Days>7</Days></RetentionPolicy></Logging>`), nil, ErrInvalidRetention},
		{"six rules", doc(`<Cors>` + strings.Repeat(`<CorsRule>`+okRule+`</CorsRule>`, 6) + `</Cors>`), nil, ErrTooManyCorsRules},
		{"rule without origins", rule(`<AllowedMethods>GET</AllowedMethods><MaxAgeInSeconds>0</MaxAgeInSeconds>`), nil, ErrInvalidCorsRule},
		{"rule without methods", rule(`<AllowedOrigins>*</AllowedOrigins><MaxAgeInSeconds>0</MaxAgeInSeconds>`), nil, ErrInvalidCorsRule},
		{"rule without max age", rule(`<AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET</AllowedMethods>`), nil, ErrInvalidCorsRule},
		{"rule empty origins", rule(`<AllowedOrigins> , </AllowedOrigins><AllowedMethods>GET</AllowedMethods><MaxAgeInSeconds>0</MaxAgeInSeconds>`), nil, ErrInvalidCorsRule},
		{"rule bad method", rule(`<AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET,TRACE</AllowedMethods><MaxAgeInSeconds>0</MaxAgeInSeconds>`), nil, ErrInvalidCorsRule},
		{"rule negative max age", rule(`<AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET</AllowedMethods><MaxAgeInSeconds>-1</MaxAgeInSeconds>`), nil, ErrInvalidCorsRule},
		{"rule bad max age", rule(`<AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET</AllowedMethods><MaxAgeInSeconds>1h</MaxAgeInSeconds>`), nil, ErrInvalidValue},
		{"rule 65 origins", rule(`<AllowedOrigins>` + strings.TrimSuffix(strings.Repeat("http://a,", 65), ",") + `</AllowedOrigins><AllowedMethods>GET</AllowedMethods><MaxAgeInSeconds>0</MaxAgeInSeconds>`), nil, ErrInvalidCorsRule},
		{"rule long origin", rule(`<AllowedOrigins>http://` + strings.Repeat("a", 250) + `</AllowedOrigins><AllowedMethods>GET</AllowedMethods><MaxAgeInSeconds>0</MaxAgeInSeconds>`), nil, ErrInvalidCorsRule},
		{"rule 3 prefixed headers", rule(okRule + `<AllowedHeaders>a*,b*,c*</AllowedHeaders>`), nil, ErrInvalidCorsRule},
		{"rule 65 exposed headers", rule(okRule + `<ExposedHeaders>` + strings.TrimSuffix(strings.Repeat("h,", 65), ",") + `</ExposedHeaders>`), nil, ErrInvalidCorsRule},
		{"rules over 2 KiB", doc(`<Cors>` + strings.Repeat(`<CorsRule>`+okRule+`<AllowedHeaders>`+strings.Repeat("x", 500)+`</AllowedHeaders></CorsRule>`, 5) + `</Cors>`), nil, ErrInvalidCorsRule},
	} {
		got, err := DecodeServiceProperties([]byte(tt.body))
		if tt.err != nil {
			var xe *XMLError
			if !errors.Is(err, tt.err) || !errors.Is(err, ErrInvalidXML) || !errors.As(err, &xe) || xe.Reason == "" {
				t.Errorf("%s: DecodeServiceProperties = %v, want %v (an *XMLError matching ErrInvalidXML)", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, *tt.want) {
			t.Errorf("%s: DecodeServiceProperties = %+v, %v; want %+v", tt.name, got, err, *tt.want)
			continue
		}
		checkPropertiesRoundTrip(t, got)
	}
}

func TestServiceProperties_Merge(t *testing.T) {
	p := DefaultServiceProperties()
	p.Cors = []CorsRule{{AllowedOrigins: "*", AllowedMethods: "GET"}}
	days := 3
	upd := ServiceProperties{HourMetrics: &Metrics{Version: "1.0", Enabled: true, IncludeAPIs: ptr(true), Retention: RetentionPolicy{Enabled: true, Days: &days}}}
	p.Merge(upd)
	if !p.HourMetrics.Enabled || *p.HourMetrics.Retention.Days != 3 || p.Logging.Read || p.MinuteMetrics.Enabled || len(p.Cors) != 1 {
		t.Fatalf("after merging HourMetrics: %+v", p)
	}
	days = 9 // the merged value does not alias the update
	*upd.HourMetrics.IncludeAPIs = false
	if *p.HourMetrics.Retention.Days != 3 || !*p.HourMetrics.IncludeAPIs {
		t.Error("Merge aliases the update")
	}
	p.Merge(ServiceProperties{Logging: &Logging{Version: "1.0", Delete: true, Retention: RetentionPolicy{Enabled: true, Days: ptr(1)}}})
	if !p.Logging.Delete || !p.HourMetrics.Enabled {
		t.Errorf("after merging Logging: %+v", p)
	}
	p.Merge(ServiceProperties{Cors: []CorsRule{}})
	if p.Cors == nil || len(p.Cors) != 0 {
		t.Errorf("empty Cors did not clear the rules: %+v", p.Cors)
	}
	p.Merge(ServiceProperties{MinuteMetrics: &Metrics{Version: "1.0", Enabled: true, IncludeAPIs: ptr(false)}})
	if !p.MinuteMetrics.Enabled {
		t.Error("MinuteMetrics not merged")
	}
	before := AppendServiceProperties(nil, p)
	p.Merge(ServiceProperties{})
	if !bytes.Equal(before, AppendServiceProperties(nil, p)) {
		t.Error("an empty Set changed the properties")
	}
}

func TestServiceProperties_UnmarshalBinaryLenient(t *testing.T) {
	// Stored values are read without the Set validation.
	b := []byte(`<StorageServiceProperties><Logging><RetentionPolicy><Enabled>true</Enabled><Days>400</Days></RetentionPolicy></Logging><Cors>` +
		strings.Repeat(`<CorsRule><AllowedMethods>TRACE</AllowedMethods></CorsRule>`, 6) + `</Cors></StorageServiceProperties>`)
	var p ServiceProperties
	if err := p.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if *p.Logging.Retention.Days != 400 || len(p.Cors) != 6 {
		t.Errorf("UnmarshalBinary = %+v", p)
	}
	if err := p.UnmarshalBinary([]byte("<")); !errors.Is(err, ErrInvalidXML) {
		t.Errorf("UnmarshalBinary(garbage) = %v", err)
	}
}

func TestAppendServiceStats(t *testing.T) {
	ts := time.Date(2024, 1, 2, 3, 0, 0, 0, time.FixedZone("x", 3600))
	want := `<?xml version="1.0" encoding="utf-8"?><StorageServiceStats><GeoReplication><Status>live</Status><LastSyncTime>Tue, 02 Jan 2024 02:00:00 GMT</LastSyncTime></GeoReplication></StorageServiceStats>`
	if got := string(AppendServiceStats(nil, ts)); got != want {
		t.Errorf("AppendServiceStats =\n%s\nwant\n%s", got, want)
	}
	want = `<?xml version="1.0" encoding="utf-8"?><StorageServiceStats><GeoReplication><Status>live</Status><LastSyncTime /></GeoReplication></StorageServiceStats>`
	if got := string(AppendServiceStats(nil, time.Time{})); got != want {
		t.Errorf("AppendServiceStats(zero) =\n%s\nwant\n%s", got, want)
	}
}

func TestMatchCORS(t *testing.T) {
	rules := []CorsRule{
		{AllowedOrigins: "https://a.example, https://b.example", AllowedMethods: "GET,PUT", AllowedHeaders: "x-ms-meta*,Content-Type", MaxAgeInSeconds: 10},
		{AllowedOrigins: "https://c.example", AllowedMethods: "MERGE", AllowedHeaders: "", MaxAgeInSeconds: 20},
		{AllowedOrigins: "*", AllowedMethods: "DELETE,get", AllowedHeaders: "*", MaxAgeInSeconds: 30},
	}
	for _, tt := range []struct {
		name, origin, method string
		headers              []string
		want                 int // index of the matching rule, -1 for none
	}{
		{"exact origin", "https://a.example", "GET", nil, 0},
		{"second origin", "https://b.example", "PUT", nil, 0},
		{"origin is case-sensitive", "https://A.example", "PUT", nil, -1},
		{"method case-insensitive", "https://a.example", "put", nil, 0},
		{"method not allowed", "https://a.example", "POST", nil, -1},
		{"falls through to wildcard", "https://a.example", "DELETE", nil, 2},
		{"wildcard origin", "http://anything", "GET", []string{"x-custom"}, 2},
		{"prefix header", "https://a.example", "GET", []string{"x-ms-meta-name", "X-MS-META-other"}, 0},
		{"prefix itself", "https://a.example", "GET", []string{"x-ms-meta"}, 0},
		{"exact header case-insensitive", "https://a.example", "GET", []string{"content-type"}, 0},
		{"comma list", "https://a.example", "GET", []string{"x-ms-meta-a, content-type"}, 0},
		{"header not allowed", "https://b.example", "PUT", []string{"x-ms-version"}, -1},
		{"header not allowed, wildcard rule", "https://a.example", "GET", []string{"x-ms-version"}, 2},
		{"empty allowed headers", "https://c.example", "MERGE", nil, 1},
		{"empty allowed headers with header", "https://c.example", "MERGE", []string{"x-a"}, -1},
		{"blank request headers", "https://c.example", "MERGE", []string{" ", ""}, 1},
		{"no origin", "", "GET", nil, -1},
		{"no method", "https://a.example", "", nil, -1},
	} {
		r, ok := MatchCORS(rules, tt.origin, tt.method, tt.headers)
		got := -1
		for i := range rules {
			if ok && r == &rules[i] {
				got = i
			}
		}
		if got != tt.want || ok != (got >= 0) {
			t.Errorf("%s: MatchCORS(%q, %q, %q) = rule %d, want %d", tt.name, tt.origin, tt.method, tt.headers, got, tt.want)
		}
	}
	if _, ok := MatchCORS(nil, "https://a.example", "GET", nil); ok {
		t.Error("MatchCORS(no rules) matched")
	}
	if !rules[2].AllowsAnyOrigin() || rules[0].AllowsAnyOrigin() {
		t.Error("AllowsAnyOrigin")
	}
}

// TestCorsRule_ExposeHeaders: prefixed entries of ExposedHeaders become
// the names they match among the headers sent (a browser would take
// "x-ms-*" for one header's name), literal entries stay as written, and
// no name comes twice.
func TestCorsRule_ExposeHeaders(t *testing.T) {
	sent := []string{"Content-Type", "ETag", "x-ms-request-id", "x-ms-continuation-NextPartitionKey", "X-Ms-Version", "x-partita-query-class"}
	for _, tt := range []struct{ exposed, want string }{
		{"", ""},
		{"x-ms-*", "x-ms-request-id,x-ms-continuation-NextPartitionKey,X-Ms-Version"},
		{"X-MS-CONTINUATION-*", "x-ms-continuation-NextPartitionKey"},
		{"*", strings.Join(sent, ",")},
		{"etag, x-ms-*", "etag,x-ms-request-id,x-ms-continuation-NextPartitionKey,X-Ms-Version"},
		{"x-ms-*,x-ms-request-id", "x-ms-request-id,x-ms-continuation-NextPartitionKey,X-Ms-Version"},
		{"x-custom,X-Custom", "x-custom"},
		{"x-ms-meta-*", ""},
		{"x-ms-meta-*,x-custom", "x-custom"},
	} {
		r := CorsRule{ExposedHeaders: tt.exposed}
		if got := r.ExposeHeaders(sent); got != tt.want {
			t.Errorf("ExposedHeaders %q: %q, want %q", tt.exposed, got, tt.want)
		}
	}
}
