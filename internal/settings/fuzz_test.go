package settings

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecodeACL: DecodeACL never panics, its errors are *XMLError matching
// ErrInvalidXML, and what it accepts survives AppendACL → DecodeACL
// unchanged, re-encoding to the same bytes.
func FuzzDecodeACL(f *testing.F) {
	for _, seed := range []string{
		"", realACL, sdkACLRequest, sdkTooManyIdentifiers(),
		`<SignedIdentifiers/>`,
		`<SignedIdentifiers><SignedIdentifier><Id>a&#xD;b</Id><AccessPolicy><Start>2024-01-01T10:00:00.123456789+02:00</Start><Expiry>2024-02-01</Expiry><Permission>dr</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`,
		`<SignedIdentifiers><SignedIdentifier><Id> x </Id><AccessPolicy/></SignedIdentifier><!-- c --></SignedIdentifiers>`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ids, err := DecodeACL(body)
		if err != nil {
			var xe *XMLError
			if !errors.Is(err, ErrInvalidXML) || !errors.As(err, &xe) {
				t.Fatalf("DecodeACL error %v (%T) is not an *XMLError matching ErrInvalidXML", err, err)
			}
			return
		}
		b1 := AppendACL(nil, ids)
		again, err := DecodeACL(b1)
		if err != nil || !reflect.DeepEqual(again, ids) {
			t.Fatalf("decode(append) = %+v, %v; want %+v\n%s", again, err, ids, b1)
		}
		if b2 := AppendACL(nil, again); !bytes.Equal(b1, b2) {
			t.Fatalf("append not stable:\n%s\n%s", b1, b2)
		}
		stored, err := UnmarshalACL(MarshalACL(ids))
		if err != nil || !reflect.DeepEqual(stored, ids) {
			t.Fatalf("UnmarshalACL(MarshalACL) = %+v, %v", stored, err)
		}
	})
}

// FuzzDecodeServiceProperties: the same contract for service properties,
// plus MatchCORS over the decoded rules never panics.
func FuzzDecodeServiceProperties(f *testing.F) {
	for _, seed := range []string{
		"", defaultPropertiesXML, realProperties, realAfterSetCors, sdkSetCors, sdkRetentionTooLong, sdkTooManyCors(), protocolExample,
		`<StorageServiceProperties><Logging><Read>1</Read><RetentionPolicy><Enabled>true</Enabled><Days> 7 </Days></RetentionPolicy></Logging><Cors/></StorageServiceProperties>`,
		`<StorageServiceProperties><HourMetrics><Enabled>true</Enabled></HourMetrics><MinuteMetrics><Version> </Version><IncludeAPIs>1</IncludeAPIs></MinuteMetrics></StorageServiceProperties>`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := DecodeServiceProperties(body)
		if err != nil {
			var xe *XMLError
			if !errors.Is(err, ErrInvalidXML) || !errors.As(err, &xe) {
				t.Fatalf("DecodeServiceProperties error %v (%T) is not an *XMLError matching ErrInvalidXML", err, err)
			}
			var lenient ServiceProperties
			_ = lenient.UnmarshalBinary(body) // never panics either
			return
		}
		b1 := AppendServiceProperties(nil, p)
		again, err := DecodeServiceProperties(b1)
		if err != nil || !reflect.DeepEqual(again, p) {
			t.Fatalf("decode(append) = %+v, %v; want %+v\n%s", again, err, p, b1)
		}
		if b2 := AppendServiceProperties(nil, again); !bytes.Equal(b1, b2) {
			t.Fatalf("append not stable:\n%s\n%s", b1, b2)
		}
		stored, _ := p.MarshalBinary()
		var back ServiceProperties
		if err := back.UnmarshalBinary(stored); err != nil || !reflect.DeepEqual(back, p) {
			t.Fatalf("UnmarshalBinary(MarshalBinary) = %+v, %v", back, err)
		}
		cur := DefaultServiceProperties()
		cur.Merge(p)
		if _, err := DecodeServiceProperties(AppendServiceProperties(nil, cur)); err != nil {
			t.Fatalf("merged properties do not decode: %v", err)
		}
		for _, r := range p.Cors {
			origin, _, _ := strings.Cut(r.AllowedOrigins, ",")
			method, _, _ := strings.Cut(r.AllowedMethods, ",")
			MatchCORS(p.Cors, strings.TrimSpace(origin), strings.TrimSpace(method), []string{r.AllowedHeaders, r.ExposedHeaders})
		}
	})
}
