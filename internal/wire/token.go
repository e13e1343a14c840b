package wire

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// EncodeToken writes a continuation token for a key value, in the real
// service's shape 1!<n>!<base64 with '=' as '-'>. Tokens are never empty
// (an empty key gives "1!0!") and contain no spaces, as the SDKs require.
func EncodeToken(s string) string {
	p := base64.StdEncoding.EncodeToString([]byte(s))
	p = strings.ReplaceAll(p, "=", "-")
	return "1!" + strconv.Itoa(len(p)) + "!" + p
}

// DecodeToken reverses EncodeToken; ok is false for a malformed token.
func DecodeToken(t string) (string, bool) {
	rest, ok := strings.CutPrefix(t, "1!")
	if !ok {
		return "", false
	}
	n, p, ok := strings.Cut(rest, "!")
	if !ok {
		return "", false
	}
	l, err := strconv.Atoi(n)
	if err != nil || l != len(p) {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(p, "-", "="))
	if err != nil {
		return "", false
	}
	return string(b), true
}
