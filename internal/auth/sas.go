package auth

// Shared access signatures (docs/COMPATIBILITY.md §10: service SAS for a table,
// account SAS). Everything here is a pure function of the query string, the
// account's keys, the clock and the request's operation; the HTTP edge picks
// the status and error code from the sentinel errors below.
//
// The edge's order of checks:
//
//	s, ok, err := ParseSAS(query)   // ok=false: not a SAS request
//	s.VerifySignature(account)      // false → AuthenticationFailed
//	if s.Identifier != "" { p, err := FindPolicy(tablePolicies, s.Identifier); s.ApplyPolicy(p) }
//	s.CheckTime(now); s.CheckProtocol(https); s.CheckIP(remote)
//	s.Authorize(op, table)          // per operation; per sub-operation for $batch
//	s.InRange(pk, rk)               // point operations; filter query results
//
// VerifySignature may be called before or after ApplyPolicy: the string to
// sign always uses the values that were in the URL.

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
)

// SAS errors. Each maps to one service error code, chosen at the HTTP edge
// (all are 403 on the real service):
//
//	ErrMalformedSAS, ErrSASExpired, ErrSASNotYetValid,
//	ErrPolicyNotFound, ErrPolicyConflict  → AuthenticationFailed
//	ErrSASProtocol                        → AuthorizationProtocolMismatch
//	ErrSASIP                              → AuthorizationSourceIPMismatch
//	ErrSASPermission                      → AuthorizationPermissionMismatch
//	ErrSASResourceType                    → AuthorizationResourceTypeMismatch
//	ErrSASService                         → AuthorizationServiceMismatch
//	ErrSASTable, ErrSASKeyRange,
//	ErrSASOperation                       → AuthorizationFailure
//
// A signature that does not verify is AuthenticationFailed too (see
// VerifySignature).
var (
	// ErrMalformedSAS: a query with sig that is not a usable SAS (sv missing,
	// unparsable st/se/sip/spr, se or sp missing, srk without spk, ...).
	ErrMalformedSAS = errors.New("auth: malformed shared access signature")
	// ErrSASExpired: now >= se.
	ErrSASExpired = errors.New("auth: shared access signature expired")
	// ErrSASNotYetValid: now < st.
	ErrSASNotYetValid = errors.New("auth: shared access signature not yet valid")
	// ErrSASProtocol: spr=https on a plain HTTP request.
	ErrSASProtocol = errors.New("auth: shared access signature does not allow this protocol")
	// ErrSASIP: the client address is outside sip.
	ErrSASIP = errors.New("auth: shared access signature does not allow this source IP")
	// ErrSASPermission: sp lacks a permission the operation needs.
	ErrSASPermission = errors.New("auth: shared access signature lacks the permission")
	// ErrSASResourceType: the account SAS's srt does not cover the operation.
	ErrSASResourceType = errors.New("auth: shared access signature does not allow this resource type")
	// ErrSASService: the account SAS's ss does not include the Table service.
	ErrSASService = errors.New("auth: shared access signature does not allow this service")
	// ErrSASTable: the table in the URL is not the service SAS's tn.
	ErrSASTable = errors.New("auth: shared access signature is for another table")
	// ErrSASKeyRange: the entity is outside the service SAS's key range.
	ErrSASKeyRange = errors.New("auth: entity outside the shared access signature's key range")
	// ErrSASOperation: the operation is not possible with this kind of SAS
	// (a table SAS used for a table or service operation; any SAS used for
	// Get/Set Table ACL).
	ErrSASOperation = errors.New("auth: operation not allowed with this shared access signature")
	// ErrPolicyConflict: a field is given both in the URL and in the stored
	// access policy named by si.
	ErrPolicyConflict = errors.New("auth: shared access signature repeats a field of its access policy")
	// ErrPolicyNotFound: si names no stored access policy of the table.
	ErrPolicyNotFound = errors.New("auth: stored access policy not found")
)

// SASKind says whether a SAS is a service (table) SAS or an account SAS.
type SASKind uint8

const (
	// ServiceSAS is a table SAS (docs/COMPATIBILITY.md §10): no ss/srt, has tn.
	ServiceSAS SASKind = iota + 1
	// AccountSAS has ss and srt (docs/COMPATIBILITY.md §10).
	AccountSAS
)

func (k SASKind) String() string {
	switch k {
	case ServiceSAS:
		return "service"
	case AccountSAS:
		return "account"
	}
	return fmt.Sprintf("SASKind(%d)", uint8(k))
}

// SAS is a parsed shared access signature from a request's query string.
// String fields hold the decoded query values verbatim: they are what the
// client signed.
type SAS struct {
	Kind          SASKind
	Version       string // sv
	Table         string // tn (service SAS)
	Permissions   string // sp as given, or the policy's after ApplyPolicy
	Start, Expiry string // st, se as given (verbatim)
	// StartTime and ExpiryTime are st and se parsed (or the policy's after
	// ApplyPolicy); zero when absent.
	StartTime, ExpiryTime time.Time
	IP                    string // sip as given
	Protocol              string // spr as given
	Identifier            string // si (service SAS)

	// Key range of a service SAS (spk, srk, epk, erk). Has* is true when the
	// parameter has a value: an empty parameter signs exactly like an
	// absent one (an empty line of the string to sign), so it must also
	// bound exactly like one, or a holder could drop it and reach keys the
	// token did not show.
	StartPK, StartRK, EndPK, EndRK             string
	HasStartPK, HasStartRK, HasEndPK, HasEndRK bool

	Services, ResourceTypes string // ss, srt (account SAS)
	EncryptionScope         string // ses (account SAS)
	Signature               string // sig, still base64
	sig                     string // its bytes, once verified (ID)

	// permFromPolicy: Permissions came from the stored access policy, so
	// the signed sp was empty.
	permFromPolicy bool
}

// sesVersion is the first version whose account SAS signs the ses line.
const sesVersion = "2020-12-06"

// minSASVersion is the earliest sv whose string to sign partita computes
// (docs/COMPATIBILITY.md §10).
const minSASVersion = "2015-04-05"

// sasVersion reports whether v is a service version (YYYY-MM-DD) from
// minSASVersion on.
func sasVersion(v string) bool {
	if len(v) != len("2006-01-02") || v[4] != '-' || v[7] != '-' {
		return false
	}
	for i, c := range []byte(v) {
		if i != 4 && i != 7 && (c < '0' || c > '9') {
			return false
		}
	}
	return v >= minSASVersion
}

// ParseSAS parses the SAS parameters of a request's query. ok is false when
// the query has no sig (the request does not use a SAS). A query with sig
// that is not a usable SAS gives an error wrapping ErrMalformedSAS.
//
// Kind: ss or srt present makes an account SAS (which needs sv, ss, srt, sp
// and se); otherwise it is a service SAS (which needs sv and tn, and sp and
// se unless si names a policy that supplies them). Only the parameters of
// the SAS's kind are read. When a parameter is repeated, the first value
// counts. Every signed parameter given empty means what it means absent,
// because the two sign alike: no st, sip, spr, si, ses or key bound.
// Permission, service and resource-type letters are not validated:
// Authorize looks only for the letters it needs.
func ParseSAS(q url.Values) (*SAS, bool, error) {
	if _, ok := q["sig"]; !ok {
		return nil, false, nil
	}
	get := func(k string) string { return q.Get(k) }
	_, hasSS := q["ss"]
	_, hasSRT := q["srt"]
	s := &SAS{
		Version:     get("sv"),
		Permissions: get("sp"),
		Start:       get("st"),
		Expiry:      get("se"),
		IP:          get("sip"),
		Protocol:    get("spr"),
		Signature:   get("sig"),
	}
	malformed := func(format string, args ...any) (*SAS, bool, error) {
		return nil, true, fmt.Errorf("%w: "+format, append([]any{ErrMalformedSAS}, args...)...)
	}
	if hasSS || hasSRT {
		s.Kind = AccountSAS
		s.Services, s.ResourceTypes, s.EncryptionScope = get("ss"), get("srt"), get("ses")
		switch {
		case s.Services == "" || s.ResourceTypes == "":
			return malformed("account SAS needs ss and srt")
		case s.Permissions == "":
			return malformed("sp is missing")
		case s.Expiry == "":
			return malformed("se is missing")
		}
	} else {
		s.Kind = ServiceSAS
		s.Table, s.Identifier = get("tn"), get("si")
		s.StartPK, s.StartRK, s.EndPK, s.EndRK = get("spk"), get("srk"), get("epk"), get("erk")
		s.HasStartPK, s.HasStartRK = s.StartPK != "", s.StartRK != ""
		s.HasEndPK, s.HasEndRK = s.EndPK != "", s.EndRK != ""
		switch {
		case s.Table == "":
			return malformed("tn is missing")
		case s.Identifier == "" && s.Permissions == "":
			return malformed("sp is missing")
		case s.Identifier == "" && s.Expiry == "":
			return malformed("se is missing")
		case s.HasStartRK && !s.HasStartPK:
			return malformed("srk without spk")
		case s.HasEndRK && !s.HasEndPK:
			return malformed("erk without epk")
		}
	}
	if s.Version == "" {
		return malformed("sv is missing")
	}
	if !sasVersion(s.Version) {
		// Earlier versions sign other strings, which partita does not
		// compute: reading such a token with today's string would accept
		// what the service refuses.
		return malformed("sv %q is not a version from %s on", s.Version, minSASVersion)
	}
	if s.Signature == "" {
		return malformed("sig is empty")
	}
	var err error
	if s.Start != "" {
		if s.StartTime, err = ParseSASTime(s.Start); err != nil {
			return malformed("st: %v", err)
		}
	}
	if s.Expiry != "" {
		if s.ExpiryTime, err = ParseSASTime(s.Expiry); err != nil {
			return malformed("se: %v", err)
		}
	}
	if s.IP != "" {
		if _, _, err := parseIPRange(s.IP); err != nil {
			return malformed("sip: %v", err)
		}
	}
	switch s.Protocol {
	case "", "https", "https,http", "http,https":
	default:
		return malformed("spr %q", s.Protocol)
	}
	return s, true, nil
}

// ParseSASTime parses a SAS or access-policy time: ISO 8601 in UTC or with
// an offset, as a date ("2024-01-01"), to the minute ("2024-01-01T10:00Z")
// or to the second with an optional fraction ("2024-01-01T10:00:00Z",
// "2024-01-01T10:00:00.1234567Z"). The result is in UTC.
func ParseSASTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04Z07:00", time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("time %q is not ISO 8601", s)
}

// Encode returns the SAS as query parameters: the inverse of ParseSAS (the
// signed values, so a SAS after ApplyPolicy encodes without the policy's
// fields).
func (s *SAS) Encode() url.Values {
	v := url.Values{}
	set := func(k, val string) {
		if val != "" {
			v.Set(k, val)
		}
	}
	set("sv", s.Version)
	set("sp", s.signedPermissions())
	set("st", s.Start)
	set("se", s.Expiry)
	set("sip", s.IP)
	set("spr", s.Protocol)
	switch s.Kind {
	case AccountSAS:
		set("ss", s.Services)
		set("srt", s.ResourceTypes)
		set("ses", s.EncryptionScope)
	case ServiceSAS:
		set("tn", s.Table)
		set("si", s.Identifier)
		set("spk", s.StartPK)
		set("srk", s.StartRK)
		set("epk", s.EndPK)
		set("erk", s.EndRK)
	}
	v.Set("sig", s.Signature)
	return v
}

func (s *SAS) signedPermissions() string {
	if s.permFromPolicy {
		return ""
	}
	return s.Permissions
}

// StringToSign returns the string the client signed. account is the
// account's primary name (without "-secondary").
//
// Service SAS (docs/COMPATIBILITY.md §10): 12 fields joined by "\n", no trailing
// newline, with the resource "/table/<account>/<lowercase tn>". Account SAS
// (§8.6): 9 lines each ending in "\n", plus the ses line from sv 2020-12-06.
func (s *SAS) StringToSign(account string) string {
	var b strings.Builder
	line := func(f string) { b.WriteString(f); b.WriteByte('\n') }
	switch s.Kind {
	case AccountSAS:
		line(account)
		line(s.signedPermissions())
		line(s.Services)
		line(s.ResourceTypes)
		line(s.Start)
		line(s.Expiry)
		line(s.IP)
		line(s.Protocol)
		line(s.Version)
		if s.Version >= sesVersion {
			line(s.EncryptionScope)
		}
	default:
		line(s.signedPermissions())
		line(s.Start)
		line(s.Expiry)
		line("/table/" + account + "/" + strings.ToLower(s.Table))
		line(s.Identifier)
		line(s.IP)
		line(s.Protocol)
		line(s.Version)
		line(s.StartPK)
		line(s.StartRK)
		line(s.EndPK)
		b.WriteString(s.EndRK)
	}
	return b.String()
}

// VerifySignature reports whether sig is the HMAC-SHA256 of the string to
// sign under one of the account's keys, comparing in constant time. The
// account's Name is the primary name the client signed with. A sig whose
// '+' arrived unencoded (and so decoded as ' ') is accepted too.
func (s *SAS) VerifySignature(a *Account) bool {
	if a == nil {
		return false
	}
	got, err := base64.StdEncoding.DecodeString(s.Signature)
	if err != nil {
		got, err = base64.StdEncoding.DecodeString(strings.ReplaceAll(s.Signature, " ", "+"))
		if err != nil {
			return false
		}
	}
	toSign := []byte(s.StringToSign(a.Name))
	ok := false
	for _, key := range a.Keys {
		m := hmac.New(sha256.New, key)
		m.Write(toSign)
		if hmac.Equal(m.Sum(nil), got) {
			ok = true // keep going: the time taken does not depend on which key matched
		}
	}
	if ok {
		s.sig = string(got)
	}
	return ok
}

// ID names the token once VerifySignature has accepted it: its signature's
// bytes. Many spellings of sig decode to them (base64 skips CR and LF, and a
// space may stand for '+'), so the spelling cannot name the token: a holder
// varying it would pass for many clients, each with its own share of the
// request slots. Before verification ID is the spelling.
func (s *SAS) ID() string {
	if s.sig != "" {
		return s.sig
	}
	return s.Signature
}

// Policy is a stored access policy of a table, which fills the fields a
// service SAS with si leaves out. Fields are the strings as stored; empty
// means the policy does not define the field.
type Policy struct {
	ID                        string
	Start, Expiry, Permission string
}

// FindPolicy returns the policy whose ID is id (exact match), or an error
// wrapping ErrPolicyNotFound.
func FindPolicy(policies []Policy, id string) (*Policy, error) {
	for i := range policies {
		if policies[i].ID == id {
			return &policies[i], nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrPolicyNotFound, id)
}

// ApplyPolicy fills StartTime, ExpiryTime and Permissions from the stored
// access policy named by si. A field defined both in the URL and in the
// policy is an error wrapping ErrPolicyConflict. After the merge the SAS
// must have an expiry and permissions (otherwise ErrMalformedSAS). A nil
// policy is ErrPolicyNotFound. The signed values (Start, Expiry and the
// signed sp) are unchanged, so VerifySignature still works.
func (s *SAS) ApplyPolicy(p *Policy) error {
	if p == nil {
		return fmt.Errorf("%w: %q", ErrPolicyNotFound, s.Identifier)
	}
	if s.Kind != ServiceSAS || s.Identifier == "" {
		return fmt.Errorf("%w: only a service SAS with si has a policy", ErrMalformedSAS)
	}
	switch {
	case s.Start != "" && p.Start != "":
		return fmt.Errorf("%w: st", ErrPolicyConflict)
	case s.Expiry != "" && p.Expiry != "":
		return fmt.Errorf("%w: se", ErrPolicyConflict)
	case s.signedPermissions() != "" && p.Permission != "":
		return fmt.Errorf("%w: sp", ErrPolicyConflict)
	}
	start, expiry := s.StartTime, s.ExpiryTime
	var err error
	if p.Start != "" {
		if start, err = ParseSASTime(p.Start); err != nil {
			return fmt.Errorf("%w: policy %q Start: %v", ErrMalformedSAS, p.ID, err)
		}
	}
	if p.Expiry != "" {
		if expiry, err = ParseSASTime(p.Expiry); err != nil {
			return fmt.Errorf("%w: policy %q Expiry: %v", ErrMalformedSAS, p.ID, err)
		}
	}
	if expiry.IsZero() {
		return fmt.Errorf("%w: no expiry in the URL or in policy %q", ErrMalformedSAS, p.ID)
	}
	perm, fromPolicy := s.signedPermissions(), false
	if p.Permission != "" {
		perm, fromPolicy = p.Permission, true
	}
	if perm == "" {
		return fmt.Errorf("%w: no permissions in the URL or in policy %q", ErrMalformedSAS, p.ID)
	}
	s.StartTime, s.ExpiryTime = start, expiry
	s.Permissions, s.permFromPolicy = perm, fromPolicy
	return nil
}

// CheckTime checks st <= now < se. No clock skew is allowed: the service
// does not allow any (clients are told to back-date st instead), and a
// development server shares its clock with its clients. A SAS without an
// expiry (a service SAS with si before ApplyPolicy) is malformed.
func (s *SAS) CheckTime(now time.Time) error {
	if s.ExpiryTime.IsZero() {
		return fmt.Errorf("%w: no expiry", ErrMalformedSAS)
	}
	if !s.StartTime.IsZero() && now.Before(s.StartTime) {
		return ErrSASNotYetValid
	}
	if !now.Before(s.ExpiryTime) {
		return ErrSASExpired
	}
	return nil
}

// CheckProtocol checks spr: "https" allows only HTTPS requests; empty,
// "https,http" and "http,https" allow both.
func (s *SAS) CheckProtocol(https bool) error {
	if s.Protocol == "https" && !https {
		return ErrSASProtocol
	}
	return nil
}

// CheckIP checks the client address against sip: a single IPv4 or IPv6
// address, or an inclusive IPv4 range "a.b.c.d-e.f.g.h". An IPv4-mapped
// IPv6 remote address counts as IPv4. A nil remote fails any sip.
func (s *SAS) CheckIP(remote net.IP) error {
	if s.IP == "" {
		return nil
	}
	start, end, err := parseIPRange(s.IP)
	if err != nil {
		return fmt.Errorf("%w: sip: %v", ErrMalformedSAS, err)
	}
	if r4 := remote.To4(); r4 != nil {
		remote = r4
	}
	if len(remote) == 0 || len(remote) != len(start) {
		return ErrSASIP
	}
	if bytes.Compare(remote, start) < 0 || bytes.Compare(remote, end) > 0 {
		return ErrSASIP
	}
	return nil
}

// parseIPRange parses sip into inclusive bounds of equal length (4 bytes
// for IPv4, 16 for IPv6).
func parseIPRange(s string) (start, end net.IP, err error) {
	a, b, isRange := strings.Cut(s, "-")
	norm := func(t string) net.IP {
		ip := net.ParseIP(t)
		if ip4 := ip.To4(); ip4 != nil && !strings.Contains(t, ":") {
			return ip4
		}
		if ip != nil && strings.Contains(t, ":") {
			return ip.To16()
		}
		return nil
	}
	start = norm(a)
	if start == nil {
		return nil, nil, fmt.Errorf("%q is not an IP address", a)
	}
	if !isRange {
		return start, start, nil
	}
	end = norm(b)
	if end == nil || len(start) != net.IPv4len || len(end) != net.IPv4len {
		return nil, nil, fmt.Errorf("%q is not an IPv4 range", s)
	}
	return start, end, nil
}

// Operation is what a request does, for SAS permission checks. A $batch is
// authorized operation by operation.
type Operation uint8

// Operations, named after the REST operations.
const (
	OpQueryTables Operation = iota + 1
	OpCreateTable
	OpDeleteTable
	OpGetTableACL
	OpSetTableACL
	OpGetServiceProperties
	OpSetServiceProperties
	OpGetServiceStats
	OpQueryEntities
	OpGetEntity
	OpInsertEntity
	OpUpdateEntity
	OpMergeEntity
	OpDeleteEntity
	OpInsertOrReplaceEntity
	OpInsertOrMergeEntity
	// OpReadAdvisor is partita's own service-level read of the advisor's
	// findings and heat map (comp=partita-advisor, comp=partita-heat). It
	// shows partition keys, which are entity data, so an account SAS
	// needs srt s and o and sp r.
	OpReadAdvisor
)

var opNames = [...]string{
	OpQueryTables:           "QueryTables",
	OpCreateTable:           "CreateTable",
	OpDeleteTable:           "DeleteTable",
	OpGetTableACL:           "GetTableACL",
	OpSetTableACL:           "SetTableACL",
	OpGetServiceProperties:  "GetServiceProperties",
	OpSetServiceProperties:  "SetServiceProperties",
	OpGetServiceStats:       "GetServiceStats",
	OpQueryEntities:         "QueryEntities",
	OpGetEntity:             "GetEntity",
	OpInsertEntity:          "InsertEntity",
	OpUpdateEntity:          "UpdateEntity",
	OpMergeEntity:           "MergeEntity",
	OpDeleteEntity:          "DeleteEntity",
	OpInsertOrReplaceEntity: "InsertOrReplaceEntity",
	OpInsertOrMergeEntity:   "InsertOrMergeEntity",
	OpReadAdvisor:           "ReadAdvisor",
}

func (op Operation) String() string {
	if int(op) < len(opNames) && opNames[op] != "" {
		return opNames[op]
	}
	return fmt.Sprintf("Operation(%d)", uint8(op))
}

// sasRule is what an operation needs of a SAS.
type sasRule struct {
	entity bool   // possible with a service (table) SAS
	srt    byte   // account SAS resource type: 's', 'c' or 'o'; 0: not allowed with any SAS
	srt2   byte   // a second resource type the account SAS must also allow; 0: none
	anyOf  string // account SAS: one of these permission letters
	allOf  string // both kinds: all of these letters (service SAS uses only this)
}

// sasRules: docs/COMPATIBILITY.md §10 (service SAS letters r a u d, and the account SAS table).
// Account SAS entity operations use srt=o, Query Entities included, as the
// real service does (Azurite wants c).
var sasRules = [...]sasRule{
	OpQueryTables:           {srt: 'c', anyOf: "l"},
	OpCreateTable:           {srt: 'c', anyOf: "acw"},
	OpDeleteTable:           {srt: 'c', anyOf: "d"},
	OpGetTableACL:           {},
	OpSetTableACL:           {},
	OpGetServiceProperties:  {srt: 's', anyOf: "r"},
	OpSetServiceProperties:  {srt: 's', anyOf: "w"},
	OpGetServiceStats:       {srt: 's', anyOf: "r"},
	OpQueryEntities:         {entity: true, srt: 'o', allOf: "r"},
	OpGetEntity:             {entity: true, srt: 'o', allOf: "r"},
	OpInsertEntity:          {entity: true, srt: 'o', allOf: "a"},
	OpUpdateEntity:          {entity: true, srt: 'o', allOf: "u"},
	OpMergeEntity:           {entity: true, srt: 'o', allOf: "u"},
	OpDeleteEntity:          {entity: true, srt: 'o', allOf: "d"},
	OpInsertOrReplaceEntity: {entity: true, srt: 'o', allOf: "au"},
	OpInsertOrMergeEntity:   {entity: true, srt: 'o', allOf: "au"},
	OpReadAdvisor:           {srt: 's', srt2: 'o', anyOf: "r"},
}

// Authorize checks that the SAS allows op on table (the table in the URL;
// ignored for service operations).
//
// Service SAS: only entity operations (else ErrSASOperation), on the table
// tn compared case-insensitively (else ErrSASTable), with the letters of
// docs/COMPATIBILITY.md §10 (else ErrSASPermission): r for query and get, a for insert,
// u for update and merge, d for delete, a and u for the upserts.
//
// Account SAS: ss must contain 't' (ErrSASService); Get/Set Table ACL are
// never allowed (ErrSASOperation); srt must contain s for service
// operations, c for table operations and o for entity operations
// (ErrSASResourceType); sp must hold the letters of the §8.6 table
// (ErrSASPermission).
//
// Key ranges are not checked here: see InRange.
func (s *SAS) Authorize(op Operation, table string) error {
	if op == 0 || int(op) >= len(sasRules) {
		return fmt.Errorf("%w: unknown operation %d", ErrSASOperation, uint8(op))
	}
	r := sasRules[op]
	switch s.Kind {
	case ServiceSAS:
		if !r.entity {
			return fmt.Errorf("%w: %v with a table SAS", ErrSASOperation, op)
		}
		if !partita.SameTable(table, s.Table) {
			return fmt.Errorf("%w: table %q, SAS for %q", ErrSASTable, table, s.Table)
		}
	case AccountSAS:
		if !strings.Contains(s.Services, "t") {
			return fmt.Errorf("%w: ss=%q", ErrSASService, s.Services)
		}
		if r.srt == 0 {
			return fmt.Errorf("%w: %v with an account SAS", ErrSASOperation, op)
		}
		if strings.IndexByte(s.ResourceTypes, r.srt) < 0 {
			return fmt.Errorf("%w: %v needs srt %c, have %q", ErrSASResourceType, op, r.srt, s.ResourceTypes)
		}
		if r.srt2 != 0 && strings.IndexByte(s.ResourceTypes, r.srt2) < 0 {
			return fmt.Errorf("%w: %v needs srt %c%c, have %q", ErrSASResourceType, op, r.srt, r.srt2, s.ResourceTypes)
		}
		if r.anyOf != "" && !strings.ContainsAny(s.Permissions, r.anyOf) {
			return fmt.Errorf("%w: %v needs one of %q, have %q", ErrSASPermission, op, r.anyOf, s.Permissions)
		}
	default:
		return fmt.Errorf("%w: unknown SAS kind", ErrMalformedSAS)
	}
	for i := 0; i < len(r.allOf); i++ {
		if strings.IndexByte(s.Permissions, r.allOf[i]) < 0 {
			return fmt.Errorf("%w: %v needs %q, have %q", ErrSASPermission, op, r.allOf, s.Permissions)
		}
	}
	return nil
}

// HasKeyRange reports whether any of spk, srk, epk and erk is set.
func (s *SAS) HasKeyRange() bool {
	return s.HasStartPK || s.HasStartRK || s.HasEndPK || s.HasEndRK
}

// InRange reports whether (pk, rk) lies inside the SAS's key range
// (docs/COMPATIBILITY.md §10), comparing by UTF-16 code units like the service:
//
//	spk only: pk >= spk;   spk and srk: pk > spk || (pk == spk && rk >= srk)
//	epk only: pk <= epk;   epk and erk: pk < epk || (pk == epk && rk <= erk)
//
// A SAS without a key range contains every key. A write or point read
// outside the range is ErrSASKeyRange at the edge; a query returns only the
// entities inside it.
func (s *SAS) InRange(pk, rk string) bool {
	if s.HasStartPK {
		c := edm.CompareStrings(pk, s.StartPK)
		if c < 0 || (c == 0 && s.HasStartRK && edm.CompareStrings(rk, s.StartRK) < 0) {
			return false
		}
	}
	if s.HasEndPK {
		c := edm.CompareStrings(pk, s.EndPK)
		if c > 0 || (c == 0 && s.HasEndRK && edm.CompareStrings(rk, s.EndRK) > 0) {
			return false
		}
	}
	return true
}
