package settings

import (
	"encoding/xml"
	"strconv"
	"strings"
)

// Limits of the service properties (docs/COMPATIBILITY.md §11 and the CORS rules of
// the storage documentation).
const (
	MaxCorsRules        = 5
	MinRetentionDays    = 1
	MaxRetentionDays    = 365
	MaxCorsOrigins      = 64   // per rule
	MaxCorsOriginLength = 256  // characters per origin
	MaxCorsHeaders      = 64   // literal headers per list
	MaxCorsPrefixed     = 2    // prefixed ("x-ms-meta*") headers per list
	MaxCorsSize         = 2048 // characters of all rules' values together
)

// CorsMethods are the methods a CORS rule may allow (matched
// case-insensitively).
var CorsMethods = []string{"DELETE", "GET", "HEAD", "MERGE", "POST", "OPTIONS", "PUT", "PATCH"}

// ServiceProperties are an account's Table service properties. In a decoded
// Set request a nil section was not in the body and keeps its current value
// (see Merge); Cors nil means absent, a non-nil empty slice means "no
// rules".
type ServiceProperties struct {
	Logging                    *Logging
	HourMetrics, MinuteMetrics *Metrics
	Cors                       []CorsRule
}

// Logging is the Storage Analytics logging section.
type Logging struct {
	Version             string
	Delete, Read, Write bool
	Retention           RetentionPolicy
}

// Metrics is the HourMetrics or MinuteMetrics section. IncludeAPIs is set
// exactly when Enabled (decoding fills false when an enabled section leaves
// it out, and drops it from a disabled one).
type Metrics struct {
	Version     string
	Enabled     bool
	IncludeAPIs *bool
	Retention   RetentionPolicy
}

// RetentionPolicy says how long logs or metrics are kept. Days is set
// exactly when Enabled, from 1 to 365.
type RetentionPolicy struct {
	Enabled bool
	Days    *int
}

// CorsRule is one CORS rule. The lists are comma-separated, as sent.
type CorsRule struct {
	AllowedOrigins, AllowedMethods, AllowedHeaders, ExposedHeaders string
	MaxAgeInSeconds                                                int
}

// DefaultServiceProperties returns the properties of a fresh account, as
// the real service reports them (docs/COMPATIBILITY.md §11): logging off, both
// metrics off, retention disabled, version 1.0, no CORS rules. (Azurite
// differs: it reports logging of reads, writes and deletes as on.)
func DefaultServiceProperties() ServiceProperties {
	return ServiceProperties{
		Logging:       &Logging{Version: "1.0"},
		HourMetrics:   &Metrics{Version: "1.0"},
		MinuteMetrics: &Metrics{Version: "1.0"},
		Cors:          []CorsRule{},
	}
}

type xmlProperties struct {
	XMLName       xml.Name    `xml:"StorageServiceProperties"`
	Logging       *xmlLogging `xml:"Logging"`
	HourMetrics   *xmlMetrics `xml:"HourMetrics"`
	MinuteMetrics *xmlMetrics `xml:"MinuteMetrics"`
	Cors          *xmlCors    `xml:"Cors"`
}

type xmlLogging struct {
	Version   *string       `xml:"Version"`
	Delete    *string       `xml:"Delete"`
	Read      *string       `xml:"Read"`
	Write     *string       `xml:"Write"`
	Retention *xmlRetention `xml:"RetentionPolicy"`
}

type xmlMetrics struct {
	Version     *string       `xml:"Version"`
	Enabled     *string       `xml:"Enabled"`
	IncludeAPIs *string       `xml:"IncludeAPIs"`
	Retention   *xmlRetention `xml:"RetentionPolicy"`
}

type xmlRetention struct {
	Enabled *string `xml:"Enabled"`
	Days    *string `xml:"Days"`
}

type xmlCors struct {
	Rules []xmlCorsRule `xml:"CorsRule"`
}

type xmlCorsRule struct {
	AllowedOrigins  *string `xml:"AllowedOrigins"`
	AllowedMethods  *string `xml:"AllowedMethods"`
	AllowedHeaders  *string `xml:"AllowedHeaders"`
	ExposedHeaders  *string `xml:"ExposedHeaders"`
	MaxAgeInSeconds *string `xml:"MaxAgeInSeconds"`
}

// DecodeServiceProperties decodes the body of a Set Service Properties
// request. Every error matches ErrInvalidXML (→ 400 InvalidXmlDocument; the
// real Table service uses that code for all of them, e.g. for 366 retention
// days and for six CORS rules):
//
//   - malformed or empty XML, or a root other than StorageServiceProperties;
//   - a boolean, integer or element text that does not parse (ErrInvalidValue);
//   - retention enabled without Days, Days outside 1–365, or Days while
//     retention is disabled (ErrInvalidRetention; the last is what the real
//     service says "Element Days is only expected when RetentionPolicy is
//     enabled." about);
//   - more than five CORS rules (ErrTooManyCorsRules);
//   - a CORS rule without AllowedOrigins, AllowedMethods or MaxAgeInSeconds,
//     a method outside CorsMethods, more than 64 origins or an origin longer
//     than 256 characters, more than 64 literal or 2 prefixed headers in a
//     list, a negative max age, or more than 2048 characters in all rules
//     (ErrInvalidCorsRule).
//
// Lenient where the documentation says "required" but the real service's
// answer is not known: a section without Version gets "1.0", missing
// booleans are false, a missing RetentionPolicy is disabled, missing
// AllowedHeaders/ExposedHeaders are empty, and unknown elements are ignored.
func DecodeServiceProperties(body []byte) (ServiceProperties, error) {
	if isBlank(body) {
		return ServiceProperties{}, xmlErrorf(ErrInvalidXML, "empty body")
	}
	p, err := parseProperties(body, true)
	if err != nil {
		return ServiceProperties{}, err
	}
	return p, nil
}

func parseProperties(body []byte, validate bool) (ServiceProperties, error) {
	var doc xmlProperties
	if err := decodeDocument(body, &doc); err != nil {
		return ServiceProperties{}, err
	}
	var p ServiceProperties
	var err error
	if doc.Logging != nil {
		if p.Logging, err = doc.Logging.parse(validate); err != nil {
			return ServiceProperties{}, err
		}
	}
	if doc.HourMetrics != nil {
		if p.HourMetrics, err = doc.HourMetrics.parse("HourMetrics", validate); err != nil {
			return ServiceProperties{}, err
		}
	}
	if doc.MinuteMetrics != nil {
		if p.MinuteMetrics, err = doc.MinuteMetrics.parse("MinuteMetrics", validate); err != nil {
			return ServiceProperties{}, err
		}
	}
	if doc.Cors != nil {
		if p.Cors, err = doc.Cors.parse(validate); err != nil {
			return ServiceProperties{}, err
		}
	}
	return p, nil
}

func version(s *string) string {
	if s == nil || strings.Trim(*s, xmlSpace) == "" {
		return "1.0"
	}
	return *s
}

func (x *xmlLogging) parse(validate bool) (*Logging, error) {
	l := &Logging{Version: version(x.Version)}
	var err error
	if l.Delete, err = parseBool("Logging/Delete", x.Delete); err != nil {
		return nil, err
	}
	if l.Read, err = parseBool("Logging/Read", x.Read); err != nil {
		return nil, err
	}
	if l.Write, err = parseBool("Logging/Write", x.Write); err != nil {
		return nil, err
	}
	if l.Retention, err = x.Retention.parse("Logging", validate); err != nil {
		return nil, err
	}
	return l, nil
}

func (x *xmlMetrics) parse(section string, validate bool) (*Metrics, error) {
	m := &Metrics{Version: version(x.Version)}
	var err error
	if m.Enabled, err = parseBool(section+"/Enabled", x.Enabled); err != nil {
		return nil, err
	}
	apis, err := parseBool(section+"/IncludeAPIs", x.IncludeAPIs)
	if err != nil {
		return nil, err
	}
	if m.Enabled {
		m.IncludeAPIs = &apis
	}
	if m.Retention, err = x.Retention.parse(section, validate); err != nil {
		return nil, err
	}
	return m, nil
}

func (x *xmlRetention) parse(section string, validate bool) (RetentionPolicy, error) {
	var r RetentionPolicy
	if x == nil {
		return r, nil
	}
	var err error
	if r.Enabled, err = parseBool(section+"/RetentionPolicy/Enabled", x.Enabled); err != nil {
		return r, err
	}
	hasDays := x.Days != nil && strings.Trim(*x.Days, xmlSpace) != ""
	switch {
	case r.Enabled && hasDays:
		days, err := parseInt(section+"/RetentionPolicy/Days", *x.Days)
		if err != nil {
			return r, err
		}
		if validate && (days < MinRetentionDays || days > MaxRetentionDays) {
			return r, xmlErrorf(ErrInvalidRetention, "%s/RetentionPolicy/Days %d outside %d–%d", section, days, MinRetentionDays, MaxRetentionDays)
		}
		r.Days = &days
	case r.Enabled:
		if validate {
			return r, xmlErrorf(ErrInvalidRetention, "%s: element Days is required when RetentionPolicy is enabled", section)
		}
		r.Enabled = false
	case hasDays && validate:
		return r, xmlErrorf(ErrInvalidRetention, "%s: element Days is only expected when RetentionPolicy is enabled", section)
	}
	return r, nil
}

func (x *xmlCors) parse(validate bool) ([]CorsRule, error) {
	if validate && len(x.Rules) > MaxCorsRules {
		return nil, xmlErrorf(ErrTooManyCorsRules, "%d CORS rules, at most %d", len(x.Rules), MaxCorsRules)
	}
	rules := make([]CorsRule, 0, len(x.Rules))
	size := 0
	for i, xr := range x.Rules {
		var r CorsRule
		if validate && (xr.AllowedOrigins == nil || xr.AllowedMethods == nil || xr.MaxAgeInSeconds == nil) {
			return nil, xmlErrorf(ErrInvalidCorsRule, "CorsRule %d: AllowedOrigins, AllowedMethods and MaxAgeInSeconds are required", i)
		}
		for _, f := range []struct {
			dst *string
			src *string
		}{{&r.AllowedOrigins, xr.AllowedOrigins}, {&r.AllowedMethods, xr.AllowedMethods}, {&r.AllowedHeaders, xr.AllowedHeaders}, {&r.ExposedHeaders, xr.ExposedHeaders}} {
			if f.src != nil {
				*f.dst = *f.src
			}
		}
		if xr.MaxAgeInSeconds != nil {
			age, err := parseInt("CorsRule/MaxAgeInSeconds", *xr.MaxAgeInSeconds)
			if err != nil {
				return nil, err
			}
			r.MaxAgeInSeconds = age
		}
		if validate {
			if err := r.validate(i); err != nil {
				return nil, err
			}
			size += len(r.AllowedOrigins) + len(r.AllowedMethods) + len(r.AllowedHeaders) + len(r.ExposedHeaders)
			if size > MaxCorsSize {
				return nil, xmlErrorf(ErrInvalidCorsRule, "CORS rules longer than %d characters", MaxCorsSize)
			}
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// splitList splits a comma-separated CORS list, trimming spaces and
// dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func (r *CorsRule) validate(i int) error {
	origins := splitList(r.AllowedOrigins)
	if len(origins) == 0 || len(origins) > MaxCorsOrigins {
		return xmlErrorf(ErrInvalidCorsRule, "CorsRule %d: %d allowed origins, want 1 to %d", i, len(origins), MaxCorsOrigins)
	}
	for _, o := range origins {
		if utf16Len(o) > MaxCorsOriginLength {
			return xmlErrorf(ErrInvalidCorsRule, "CorsRule %d: origin longer than %d characters", i, MaxCorsOriginLength)
		}
	}
	methods := splitList(r.AllowedMethods)
	if len(methods) == 0 {
		return xmlErrorf(ErrInvalidCorsRule, "CorsRule %d: no allowed methods", i)
	}
	for _, m := range methods {
		if !isCorsMethod(m) {
			return xmlErrorf(ErrInvalidCorsRule, "CorsRule %d: method %q not allowed", i, m)
		}
	}
	for _, list := range []struct{ name, v string }{{"AllowedHeaders", r.AllowedHeaders}, {"ExposedHeaders", r.ExposedHeaders}} {
		literal, prefixed := 0, 0
		for _, h := range splitList(list.v) {
			switch {
			case h == "*":
			case strings.HasSuffix(h, "*"):
				prefixed++
			default:
				literal++
			}
		}
		if literal > MaxCorsHeaders || prefixed > MaxCorsPrefixed {
			return xmlErrorf(ErrInvalidCorsRule, "CorsRule %d: %s has %d literal and %d prefixed headers, at most %d and %d", i, list.name, literal, prefixed, MaxCorsHeaders, MaxCorsPrefixed)
		}
	}
	if r.MaxAgeInSeconds < 0 {
		return xmlErrorf(ErrInvalidCorsRule, "CorsRule %d: negative MaxAgeInSeconds", i)
	}
	return nil
}

func isCorsMethod(m string) bool {
	for _, c := range CorsMethods {
		if strings.EqualFold(m, c) {
			return true
		}
	}
	return false
}

// Merge applies a Set Service Properties request: each section present in
// update (non-nil) replaces the current one; Cors, when present, replaces
// all rules. Absent sections keep their values.
func (p *ServiceProperties) Merge(update ServiceProperties) {
	if update.Logging != nil {
		l := *update.Logging
		l.Retention = l.Retention.clone()
		p.Logging = &l
	}
	if update.HourMetrics != nil {
		p.HourMetrics = update.HourMetrics.clone()
	}
	if update.MinuteMetrics != nil {
		p.MinuteMetrics = update.MinuteMetrics.clone()
	}
	if update.Cors != nil {
		p.Cors = append([]CorsRule{}, update.Cors...)
	}
}

func (r RetentionPolicy) clone() RetentionPolicy {
	if r.Days != nil {
		d := *r.Days
		r.Days = &d
	}
	return r
}

func (m *Metrics) clone() *Metrics {
	c := *m
	if c.IncludeAPIs != nil {
		v := *c.IncludeAPIs
		c.IncludeAPIs = &v
	}
	c.Retention = c.Retention.clone()
	return &c
}

// AppendServiceProperties appends the body of a Get Service Properties
// response, in the real service's layout:
//
//	<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties>
//	<Logging><Version/><Read/><Write/><Delete/><RetentionPolicy/></Logging>
//	<HourMetrics><Version/><Enabled/>[<IncludeAPIs/>]<RetentionPolicy/></HourMetrics>
//	<MinuteMetrics>…</MinuteMetrics>
//	<Cors><CorsRule><AllowedMethods/><AllowedOrigins/><AllowedHeaders/><ExposedHeaders/><MaxAgeInSeconds/></CorsRule></Cors>
//	</StorageServiceProperties>
//
// with <Days> only when retention is enabled, IncludeAPIs only when the
// metrics are enabled, and <Cors /> when there are no rules. Nil sections
// are left out (a stored value always has all of them).
func AppendServiceProperties(dst []byte, p ServiceProperties) []byte {
	dst = append(dst, xmlDecl...)
	dst = append(dst, "<StorageServiceProperties>"...)
	if l := p.Logging; l != nil {
		dst = append(dst, "<Logging>"...)
		dst = appendElem(dst, "Version", l.Version)
		dst = appendBool(dst, "Read", l.Read)
		dst = appendBool(dst, "Write", l.Write)
		dst = appendBool(dst, "Delete", l.Delete)
		dst = appendRetention(dst, l.Retention)
		dst = append(dst, "</Logging>"...)
	}
	dst = appendMetrics(dst, "HourMetrics", p.HourMetrics)
	dst = appendMetrics(dst, "MinuteMetrics", p.MinuteMetrics)
	switch {
	case p.Cors == nil:
	case len(p.Cors) == 0:
		dst = append(dst, "<Cors />"...)
	default:
		dst = append(dst, "<Cors>"...)
		for _, r := range p.Cors {
			dst = append(dst, "<CorsRule>"...)
			dst = appendElem(dst, "AllowedMethods", r.AllowedMethods)
			dst = appendElem(dst, "AllowedOrigins", r.AllowedOrigins)
			dst = appendElem(dst, "AllowedHeaders", r.AllowedHeaders)
			dst = appendElem(dst, "ExposedHeaders", r.ExposedHeaders)
			dst = appendElem(dst, "MaxAgeInSeconds", strconv.Itoa(r.MaxAgeInSeconds))
			dst = append(dst, "</CorsRule>"...)
		}
		dst = append(dst, "</Cors>"...)
	}
	return append(dst, "</StorageServiceProperties>"...)
}

func appendMetrics(dst []byte, name string, m *Metrics) []byte {
	if m == nil {
		return dst
	}
	dst = append(dst, '<')
	dst = append(dst, name...)
	dst = append(dst, '>')
	dst = appendElem(dst, "Version", m.Version)
	dst = appendBool(dst, "Enabled", m.Enabled)
	if m.Enabled {
		apis := m.IncludeAPIs != nil && *m.IncludeAPIs
		dst = appendBool(dst, "IncludeAPIs", apis)
	}
	dst = appendRetention(dst, m.Retention)
	dst = append(dst, "</"...)
	dst = append(dst, name...)
	return append(dst, '>')
}

func appendRetention(dst []byte, r RetentionPolicy) []byte {
	dst = append(dst, "<RetentionPolicy>"...)
	dst = appendBool(dst, "Enabled", r.Enabled && r.Days != nil)
	if r.Enabled && r.Days != nil {
		dst = appendElem(dst, "Days", strconv.Itoa(*r.Days))
	}
	return append(dst, "</RetentionPolicy>"...)
}

// MarshalBinary returns the stored form of the properties: their XML, as
// AppendServiceProperties writes it.
func (p ServiceProperties) MarshalBinary() ([]byte, error) {
	return AppendServiceProperties(nil, p), nil
}

// UnmarshalBinary reads what MarshalBinary wrote, without the validation of
// a Set request.
func (p *ServiceProperties) UnmarshalBinary(b []byte) error {
	v, err := parseProperties(b, false)
	if err != nil {
		return err
	}
	*p = v
	return nil
}
