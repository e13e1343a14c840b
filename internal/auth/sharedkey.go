// Package auth verifies the Table service's request signatures: SharedKey
// and SharedKeyLite (docs/COMPATIBILITY.md §10). It is pure functions over request
// parts plus a key ring; it returns its own errors and knows no HTTP status.
package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

var (
	// ErrNoCredentials: the request carries no Authorization header.
	ErrNoCredentials = errors.New("auth: no credentials")
	// ErrMalformed: the Authorization header is not "Scheme account:sig".
	ErrMalformed = errors.New("auth: malformed authorization header")
	// ErrUnknownAccount: the header names an account we do not have.
	ErrUnknownAccount = errors.New("auth: unknown account")
	// ErrSignatureMismatch: no key of the account produces the signature.
	ErrSignatureMismatch = errors.New("auth: signature mismatch")
	// ErrClockSkew: the request date is missing or more than 15 minutes
	// from the server's clock.
	ErrClockSkew = errors.New("auth: request date outside the allowed window")
)

// MaxClockSkew is how far a request's date may be from the server's clock.
const MaxClockSkew = 15 * time.Minute

// Account is a storage account and its keys (decoded from base64).
type Account struct {
	Name string
	Keys [][]byte

	macsOnce sync.Once
	macs     []sync.Pool // keyed HMAC states, one pool per key
}

// Keyring maps account names to accounts.
type Keyring map[string]*Account

// ParseAccounts parses "name:key1[:key2];name2:key1" (the AZURITE_ACCOUNTS
// format). Keys are base64.
func ParseAccounts(s string) (Keyring, error) {
	kr := Keyring{}
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		fields := strings.Split(part, ":")
		if len(fields) < 2 || fields[0] == "" {
			return nil, fmt.Errorf("auth: account %q: want name:key1[:key2]", part)
		}
		a := &Account{Name: fields[0]}
		for _, k := range fields[1:] {
			b, err := base64.StdEncoding.DecodeString(k)
			if err != nil || len(b) == 0 {
				return nil, fmt.Errorf("auth: account %q: key is not base64", fields[0])
			}
			a.Keys = append(a.Keys, b)
		}
		kr[a.Name] = a
	}
	if len(kr) == 0 {
		return nil, errors.New("auth: no accounts")
	}
	return kr, nil
}

// Sign returns base64(HMAC-SHA256(key, stringToSign)).
func Sign(key []byte, stringToSign string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(stringToSign))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// CanonicalizedResource returns "/" + account + rawPath [+ "?comp=" + comp].
// rawPath is the request path exactly as sent (still percent-encoded); an
// empty path is "/".
func CanonicalizedResource(account, rawPath string, query url.Values) string {
	return string(appendCanonicalizedResource(nil, account, rawPath, query))
}

// StringToSignLite is the SharedKeyLite string to sign for Table.
func StringToSignLite(date, resource string) string { return date + "\n" + resource }

// StringToSignFull is the SharedKey string to sign for Table.
func StringToSignFull(method, contentMD5, contentType, date, resource string) string {
	return method + "\n" + contentMD5 + "\n" + contentType + "\n" + date + "\n" + resource
}

// Request is what verification needs of an HTTP request.
type Request struct {
	Method string
	Header http.Header
	// RawPath is the path as sent, up to '?', still percent-encoded.
	RawPath string
	Query   url.Values
}

// Verify checks the request's SharedKey or SharedKeyLite signature.
// signingAccount is the account the signature is computed with (the
// primary name, without "-secondary"). It returns the account on success.
//
// It runs on every request, so it builds the string to sign in a pooled
// buffer and reuses keyed HMAC states instead of allocating them.
func (kr Keyring) Verify(r Request, signingAccount string, now time.Time) (*Account, error) {
	h := headerValue(r.Header, "Authorization")
	if h == "" {
		return nil, ErrNoCredentials
	}
	scheme, cred, ok := strings.Cut(h, " ")
	if !ok {
		return nil, ErrMalformed
	}
	name, sig, ok := strings.Cut(strings.TrimSpace(cred), ":")
	if !ok || name == "" || sig == "" {
		return nil, ErrMalformed
	}
	a, ok := kr[name]
	if !ok || strings.TrimSuffix(signingAccount, "-secondary") != name {
		return nil, ErrUnknownAccount
	}
	date := headerValue(r.Header, "X-Ms-Date")
	if date == "" {
		date = headerValue(r.Header, "Date")
	}
	t, ok := parseHTTPDate(date)
	if !ok {
		var err error
		if t, err = http.ParseTime(date); err != nil {
			return nil, ErrClockSkew
		}
	}
	if t.Sub(now) > MaxClockSkew || now.Sub(t) > MaxClockSkew {
		return nil, ErrClockSkew
	}
	if scheme != "SharedKeyLite" && scheme != "SharedKey" {
		return nil, ErrMalformed
	}
	// Room for any signature of up to twice a digest's length; a longer
	// one cannot match.
	var got [2 * sha256.Size]byte
	if base64.StdEncoding.DecodedLen(len(sig)) > len(got) {
		return nil, ErrSignatureMismatch
	}
	n, err := base64.StdEncoding.Decode(got[:], []byte(sig))
	if err != nil || n != sha256.Size {
		return nil, ErrSignatureMismatch
	}

	sb := signBufs.Get().(*signBuf)
	defer signBufs.Put(sb)
	b := sb.b[:0]
	if scheme == "SharedKey" {
		b = append(b, r.Method...)
		b = append(b, '\n')
		b = append(b, headerValue(r.Header, "Content-Md5")...)
		b = append(b, '\n')
		b = append(b, headerValue(r.Header, "Content-Type")...)
		b = append(b, '\n')
	}
	b = append(b, date...)
	b = append(b, '\n')
	b = appendCanonicalizedResource(b, name, r.RawPath, r.Query)
	sb.b = b
	for i := range a.Keys {
		if hmac.Equal(a.sum(i, b, sb.sum[:0]), got[:n]) {
			return a, nil
		}
	}
	return nil, ErrSignatureMismatch
}

// headerValue is Header.Get for a name already in canonical form: no
// canonicalization, no allocation.
func headerValue(h http.Header, canonical string) string {
	if v := h[canonical]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// appendCanonicalizedResource appends "/" + account + rawPath [+ "?comp=" +
// comp], without allocating (Verify's form of CanonicalizedResource).
func appendCanonicalizedResource(b []byte, account, rawPath string, query url.Values) []byte {
	if rawPath == "" {
		rawPath = "/"
	}
	b = append(b, '/')
	b = append(b, account...)
	b = append(b, rawPath...)
	if comp, ok := query["comp"]; ok && len(comp) > 0 {
		b = append(b, "?comp="...)
		b = append(b, comp[0]...)
	}
	return b
}

type signBuf struct {
	b   []byte
	sum [sha256.Size]byte
}

var signBufs = sync.Pool{New: func() any { return &signBuf{b: make([]byte, 0, 256)} }}

// sum appends HMAC-SHA256(a.Keys[i], msg) to dst, with a pooled keyed state.
func (a *Account) sum(i int, msg, dst []byte) []byte {
	a.macsOnce.Do(func() {
		a.macs = make([]sync.Pool, len(a.Keys))
		for j := range a.Keys {
			key := a.Keys[j]
			a.macs[j].New = func() any { return hmac.New(sha256.New, key) }
		}
	})
	m := a.macs[i].Get().(hash.Hash)
	m.Reset()
	m.Write(msg)
	dst = m.Sum(dst)
	a.macs[i].Put(m)
	return dst
}

var weekdays = [...]string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}
var months = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// parseHTTPDate parses the one form every SDK sends, RFC 1123 with GMT
// ("Mon, 02 Jan 2006 15:04:05 GMT"), without time.Parse's generality. It
// accepts only what http.ParseTime accepts, with the same result; anything
// else reports false and the caller falls back to http.ParseTime.
func parseHTTPDate(s string) (time.Time, bool) {
	if len(s) != 29 || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' ||
		s[19] != ':' || s[22] != ':' || s[25:] != " GMT" {
		return time.Time{}, false
	}
	wd := -1
	for i, w := range weekdays {
		if s[:3] == w {
			wd = i
		}
	}
	mon := 0
	for i, m := range months {
		if s[8:11] == m {
			mon = i + 1
		}
	}
	day, ok1 := digits(s[5:7])
	year, ok2 := digits(s[12:16])
	hh, ok3 := digits(s[17:19])
	mm, ok4 := digits(s[20:22])
	ss, ok5 := digits(s[23:25])
	if wd < 0 || mon == 0 || !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || hh > 23 || mm > 59 || ss > 59 || day < 1 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(mon), day, hh, mm, ss, 0, time.UTC)
	if t.Day() != day { // 31 Feb and the like: out of range
		return time.Time{}, false
	}
	return t, true
}

func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
