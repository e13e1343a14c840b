// Package auth verifies the Table service's request signatures: SharedKey
// and SharedKeyLite (PROTOCOL §8.2–8.4). It is pure functions over request
// parts plus a key ring; it returns its own errors and knows no HTTP status.
package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
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
	if rawPath == "" {
		rawPath = "/"
	}
	s := "/" + account + rawPath
	if comp, ok := query["comp"]; ok && len(comp) > 0 {
		s += "?comp=" + comp[0]
	}
	return s
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
func (kr Keyring) Verify(r Request, signingAccount string, now time.Time) (*Account, error) {
	h := r.Header.Get("Authorization")
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
	date := r.Header.Get("x-ms-date")
	if date == "" {
		date = r.Header.Get("Date")
	}
	t, err := http.ParseTime(date)
	if err != nil || t.Sub(now) > MaxClockSkew || now.Sub(t) > MaxClockSkew {
		return nil, ErrClockSkew
	}
	resources := []string{CanonicalizedResource(name, r.RawPath, r.Query)}
	var toSign []string
	switch scheme {
	case "SharedKeyLite":
		for _, res := range resources {
			toSign = append(toSign, StringToSignLite(date, res))
		}
	case "SharedKey":
		for _, res := range resources {
			toSign = append(toSign, StringToSignFull(r.Method, r.Header.Get("Content-MD5"), r.Header.Get("Content-Type"), date, res))
		}
	default:
		return nil, ErrMalformed
	}
	got, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		return nil, ErrSignatureMismatch
	}
	for _, key := range a.Keys {
		for _, s := range toSign {
			m := hmac.New(sha256.New, key)
			m.Write([]byte(s))
			if hmac.Equal(m.Sum(nil), got) {
				return a, nil
			}
		}
	}
	return nil, ErrSignatureMismatch
}
