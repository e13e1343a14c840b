package httpapi

import (
	"errors"
	"net/url"
	"testing"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/wire"
)

// TestNegotiate: $format decides when present, Accept otherwise; Atom,
// asked either way, is 415 unless JSON is acceptable too.
func TestNegotiate(t *testing.T) {
	const atom = "atom"
	cases := []struct {
		accept, format string
		want           wire.Metadata
		err            string
	}{
		{"application/json;odata=nometadata", "", wire.NoMetadata, ""},
		{"application/json;odata=fullmetadata", "", wire.FullMetadata, ""},
		{"application/json", "", wire.MinimalMetadata, ""},
		{"*/*", "", wire.MinimalMetadata, ""},
		{"", "", wire.MinimalMetadata, ""},
		{"application/atom+xml", "", 0, atom},
		{"application/xml", "", 0, atom},
		{"application/atom+xml,application/xml", "", 0, atom},
		// JSON acceptable as well: answered in JSON, whatever comes first.
		{"application/xml;q=0.1, application/json;odata=nometadata", "", wire.NoMetadata, ""},
		{"application/atom+xml, */*;q=0.1", "", wire.MinimalMetadata, ""},
		// $format decides over Accept, both ways.
		{"application/xml", "application/json;odata=nometadata", wire.NoMetadata, ""},
		{"application/json;odata=nometadata", "application/atom+xml", 0, atom},
		{"application/json;odata=nometadata", "atom", 0, atom},
		{"application/json;odata=nometadata", "json", wire.MinimalMetadata, ""},
	}
	for _, c := range cases {
		q := url.Values{}
		if c.format != "" {
			q.Set("$format", c.format)
		}
		m, err := negotiate(c.accept, q, false)
		var pe *partita.Error
		switch {
		case c.err == atom && (!errors.As(err, &pe) || pe.Code != partita.CodeAtomFormatNotSupported):
			t.Errorf("Accept %q, $format %q: %v, want AtomFormatNotSupported", c.accept, c.format, err)
		case c.err == "" && (err != nil || m != c.want):
			t.Errorf("Accept %q, $format %q: %v, %v; want %v", c.accept, c.format, m, err, c.want)
		}
		// The XML operations answer XML whatever is asked.
		if _, err := negotiate(c.accept, q, true); err != nil {
			t.Errorf("Accept %q, $format %q on an XML operation: %v", c.accept, c.format, err)
		}
	}
}

func TestValidVersion(t *testing.T) {
	for v, want := range map[string]bool{
		"2019-02-02": true, "2025-11-05": true, "2031-01-01": true, "2020-12-31": true,
		"9999-99-99": false, "2020-00-10": false, "2020-13-01": false, "2020-01-00": false, "2020-01-32": false,
		"2020-1-01": false, "20200101": false, "yesterday": false, "2020-01-0x": false, "": false,
	} {
		if validVersion(v) != want {
			t.Errorf("validVersion(%q) = %v, want %v", v, !want, want)
		}
	}
}
