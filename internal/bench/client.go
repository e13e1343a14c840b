package bench

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// apiVersion is the x-ms-version the bench sends (the Go and JS SDKs').
const apiVersion = "2019-02-02"

const (
	acceptMinimal = "application/json;odata=minimalmetadata"
	contentJSON   = "application/json"
)

// Client is a lean Table client: SharedKeyLite signing with pooled HMACs, a
// keep-alive connection pool sized for the bench's concurrency, and request
// and response bodies in caller-owned buffers. It speaks path style
// (http://host:port/account) or host style (https://account.table.…).
type Client struct {
	hc      *http.Client
	tr      *http.Transport
	scheme  string
	host    string
	prefix  string // path prefix of the endpoint ("/devstoreaccount1" or "")
	base    string // scheme://host + prefix
	account string
	hmacs   sync.Pool
	date    atomic.Pointer[cachedDate]
	timeout time.Duration
}

type cachedDate struct {
	sec int64
	s   string
}

// NewClient returns a client of endpoint for account, signing with the
// base64 key. conns is the number of keep-alive connections to keep.
func NewClient(endpoint, account, key string, conns int, timeout time.Duration) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(endpoint, "/"))
	if err != nil {
		return nil, fmt.Errorf("--endpoint: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("--endpoint %q: want http(s)://host[:port][/account]", endpoint)
	}
	if u.RawQuery != "" {
		return nil, fmt.Errorf("--endpoint %q: no query string, please (the bench signs with --key)", endpoint)
	}
	k, err := base64.StdEncoding.DecodeString(key)
	if err != nil || len(k) == 0 {
		return nil, errors.New("--key: not base64")
	}
	if account == "" {
		return nil, errors.New("--account is empty")
	}
	if conns < 1 {
		conns = 1
	}
	tr := &http.Transport{
		Proxy:               nil, // benchmarks talk to the endpoint directly
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2 * conns,
		MaxIdleConnsPerHost: 2 * conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		WriteBufferSize:     64 << 10,
		ReadBufferSize:      64 << 10,
	}
	c := &Client{
		hc:      &http.Client{Transport: tr},
		tr:      tr,
		scheme:  u.Scheme,
		host:    u.Host,
		prefix:  u.EscapedPath(),
		account: account,
		timeout: timeout,
	}
	c.base = c.scheme + "://" + c.host + c.prefix
	c.hmacs.New = func() any { return hmac.New(sha256.New, k) }
	return c, nil
}

// Base is the endpoint URL without a trailing slash.
func (c *Client) Base() string { return c.base }

// CloseIdle drops idle keep-alive connections (between workloads, so that
// a server with a short keep-alive timeout, like Azurite's 5 s, never
// closes one under a non-idempotent request).
func (c *Client) CloseIdle() { c.tr.CloseIdleConnections() }

// dateNow returns the RFC 1123 date of this second, formatted once per second.
func (c *Client) dateNow() string {
	now := time.Now()
	sec := now.Unix()
	if d := c.date.Load(); d != nil && d.sec == sec {
		return d.s
	}
	d := &cachedDate{sec: sec, s: now.UTC().Format(http.TimeFormat)}
	c.date.Store(d)
	return d.s
}

// sign returns the SharedKeyLite Authorization value for a request of
// rawPath (as sent, including the endpoint prefix) at date (docs/COMPATIBILITY.md §10:
// date "\n" "/" account rawPath; the bench never sends comp=).
func (c *Client) sign(date, rawPath string) string {
	m := c.hmacs.Get().(hash.Hash)
	m.Reset()
	io.WriteString(m, date)
	io.WriteString(m, "\n/")
	io.WriteString(m, c.account)
	if rawPath == "" {
		rawPath = "/"
	}
	io.WriteString(m, rawPath)
	var sum [sha256.Size]byte
	var out [44]byte
	base64.StdEncoding.Encode(out[:], m.Sum(sum[:0]))
	c.hmacs.Put(m)
	return "SharedKeyLite " + c.account + ":" + string(out[:])
}

// call is one HTTP request of the bench.
type call struct {
	method string
	// path is the resource path after the endpoint, escaped, starting with
	// '/': "/mytable", "/mytable(PartitionKey='p',RowKey='r')", "/$batch".
	path        string
	rawQuery    string
	body        []byte
	contentType string
	prefer      string
	ifMatch     string
}

// response is what the bench keeps of a response. body aliases the
// caller's buffer.
type response struct {
	status int
	header http.Header
	body   []byte
}

// statusError is a response with an unexpected status.
type statusError struct {
	method, path string
	status       int
	body         string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %s", e.method, e.path, e.status, http.StatusText(e.status), e.body)
}

// do sends c and reads the whole response body into buf (reset first).
func (c *Client) do(ctx context.Context, cl *call, buf *bytes.Buffer) (response, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	rawPath := c.prefix + cl.path
	date := c.dateNow()
	h := http.Header{
		"X-Ms-Date":          {date},
		"X-Ms-Version":       {apiVersion},
		"Authorization":      {c.sign(date, rawPath)},
		"Accept":             {acceptMinimal},
		"Dataserviceversion": {"3.0"},
	}
	if cl.contentType != "" {
		h["Content-Type"] = []string{cl.contentType}
	}
	if cl.prefer != "" {
		h["Prefer"] = []string{cl.prefer}
	}
	if cl.ifMatch != "" {
		h["If-Match"] = []string{cl.ifMatch}
	}
	req := &http.Request{
		Method:     cl.method,
		URL:        &url.URL{Scheme: c.scheme, Host: c.host, Opaque: rawPath, RawQuery: cl.rawQuery},
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     h,
		Host:       c.host,
	}
	if cl.body != nil {
		b := cl.body
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		req.ContentLength = int64(len(b))
	} else if cl.method == http.MethodPost || cl.method == http.MethodPut || cl.method == http.MethodPatch {
		req.Body = http.NoBody
	}
	req = req.WithContext(ctx)
	resp, err := c.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its URL prints oddly for an opaque path
		}
		return response{}, fmt.Errorf("%s %s: %w", cl.method, cl.path, err)
	}
	buf.Reset()
	_, err = buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return response{}, fmt.Errorf("%s %s: reading response: %w", cl.method, cl.path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: buf.Bytes()}, nil
}

// expect returns a *statusError unless r has one of the wanted statuses.
func expect(cl *call, r response, want ...int) error {
	for _, w := range want {
		if r.status == w {
			return nil
		}
	}
	b := r.body
	if len(b) > 300 {
		b = b[:300]
	}
	return &statusError{method: cl.method, path: cl.path, status: r.status, body: strings.TrimSpace(string(b))}
}

// CreateTable creates name; an existing table is fine when mayExist.
func (c *Client) CreateTable(ctx context.Context, name string, mayExist bool) error {
	var buf bytes.Buffer
	cl := &call{method: http.MethodPost, path: "/Tables", body: []byte(`{"TableName":"` + name + `"}`), contentType: contentJSON, prefer: "return-no-content"}
	r, err := c.do(ctx, cl, &buf)
	if err != nil {
		return err
	}
	if mayExist && r.status == http.StatusConflict {
		return nil
	}
	return expect(cl, r, http.StatusCreated, http.StatusNoContent)
}

// DeleteTable deletes name.
func (c *Client) DeleteTable(ctx context.Context, name string) error {
	var buf bytes.Buffer
	cl := &call{method: http.MethodDelete, path: "/Tables('" + escapeKey(name) + "')"}
	r, err := c.do(ctx, cl, &buf)
	if err != nil {
		return err
	}
	return expect(cl, r, http.StatusNoContent)
}

// escapeKey escapes a key for a key predicate in a URL path: quotes are
// doubled (OData) and every byte outside the unreserved set and the few
// sub-delims that keys commonly hold is percent-encoded.
func escapeKey(s string) string {
	safe := true
	for i := 0; i < len(s); i++ {
		if !keySafe(s[i]) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	var b strings.Builder
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			b.WriteString("''")
		case keySafe(c):
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	return b.String()
}

func keySafe(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~'
}

// queryEscape escapes a query parameter value (spaces as %20, which every
// server decodes; '+' would be ambiguous).
func queryEscape(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }

// countEntities counts the objects in the top-level "value" array of a
// Query Entities body without decoding it: a byte scan that tracks strings
// and nesting depth. It returns -1 when there is no "value" array.
func countEntities(b []byte) int {
	i := bytes.Index(b, []byte(`"value":[`))
	if i < 0 {
		i = bytes.Index(b, []byte(`"value": [`))
		if i < 0 {
			return -1
		}
		i++
	}
	i += len(`"value":[`)
	n, depth := 0, 0
	for ; i < len(b); i++ {
		c := b[i]
		if c == '"' {
			// Jump to the closing quote: the next quote not escaped by
			// an odd run of backslashes. IndexByte is vectorized, so a
			// long string costs little.
			for {
				j := bytes.IndexByte(b[i+1:], '"')
				if j < 0 {
					return n
				}
				i += 1 + j
				k := i - 1
				for b[k] == '\\' {
					k--
				}
				if (i-1-k)%2 == 0 {
					break
				}
			}
			continue
		}
		switch c {
		case '{', '[':
			if depth == 0 && c == '{' {
				n++
			}
			depth++
		case '}':
			depth--
		case ']':
			if depth == 0 {
				return n
			}
			depth--
		}
	}
	return n
}

// batchFailure returns the first non-2xx sub-response status line of a
// $batch response body, or "" when all succeeded. A failed changeset still
// answers 202; its body holds the failing operation's response.
func batchFailure(b []byte) string {
	rest := b
	for {
		i := bytes.Index(rest, []byte("HTTP/1.1 "))
		if i < 0 {
			return ""
		}
		rest = rest[i+len("HTTP/1.1 "):]
		if len(rest) < 3 {
			return "truncated sub-response"
		}
		if rest[0] != '2' {
			end := bytes.IndexByte(rest, '\n')
			if end < 0 {
				end = len(rest)
			}
			line := strings.TrimSpace(string(rest[:end]))
			// The error body follows the headers; keep its start.
			if j := bytes.Index(rest, []byte("\r\n\r\n")); j >= 0 {
				tail := rest[j+4:]
				if k := bytes.Index(tail, []byte("\r\n--")); k >= 0 {
					tail = tail[:k]
				}
				if len(tail) > 200 {
					tail = tail[:200]
				}
				line += ": " + strings.TrimSpace(string(tail))
			}
			return line
		}
	}
}

// itoaPad appends n in decimal, left-padded with zeros to width.
func itoaPad(dst []byte, n uint64, width int) []byte {
	var tmp [20]byte
	s := strconv.AppendUint(tmp[:0], n, 10)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}
