package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"time"
)

// signLite signs req with SharedKeyLite for the dev account; rawPath is the
// escaped path as sent.
func signLite(req *http.Request, rawPath string) {
	key, _ := base64.StdEncoding.DecodeString(devKey)
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2019-02-02")
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json;odata=minimalmetadata")
	}
	res := "/" + devAccount + rawPath
	if c := req.URL.Query().Get("comp"); c != "" {
		res += "?comp=" + c
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(date + "\n" + res))
	req.Header.Set("Authorization", "SharedKeyLite "+devAccount+":"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
}
