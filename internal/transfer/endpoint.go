// Package transfer copies tables between Table endpoints and JSONL files:
// the engine behind `partita copy`. It talks HTTP itself with partita's own
// codecs (internal/wire for entity JSON, internal/changeset for $batch), so
// every EDM type survives exactly: the Go SDK's map decoding turns Int64 and
// non-finite doubles into plain JSON values and loses Int32 versus Double.
package transfer

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/tablestore"
)

const apiVersion = "2019-02-02"

// DevKey is the well-known key of the development account.
const DevKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

// Endpoint is a Table service endpoint and the credential to use with it.
type Endpoint struct {
	// Base is the service URL without a trailing slash, e.g.
	// http://127.0.0.1:10002/devstoreaccount1.
	Base    string
	Account string
	key     []byte     // SharedKeyLite signing key, or nil
	sas     url.Values // SAS query parameters, or nil
	// Table is the table a table SAS is for ("" for an account SAS or key).
	Table string
}

// IsEndpoint reports whether spec names an endpoint rather than a file:
// a connection string or an http(s) URL.
func IsEndpoint(spec string) bool {
	if strings.HasPrefix(spec, "http://") || strings.HasPrefix(spec, "https://") {
		return true
	}
	if isFileSpec(spec) {
		return false
	}
	l := strings.ToLower(spec)
	for _, k := range []string{"accountname=", "tableendpoint=", "usedevelopmentstorage=", "sharedaccesssignature="} {
		if strings.Contains(l, k) {
			return true
		}
	}
	return false
}

// ParseEndpoint parses an Azure Storage connection string
// (DefaultEndpointsProtocol=…;AccountName=…;AccountKey=…;TableEndpoint=…,
// UseDevelopmentStorage=true, or with SharedAccessSignature=…) or a URL with
// a SAS in its query (http://host/account?sv=…&sig=…, or a table SAS URL
// http://host/account/table?…).
func ParseEndpoint(spec string) (*Endpoint, error) {
	if strings.HasPrefix(spec, "http://") || strings.HasPrefix(spec, "https://") {
		u, err := url.Parse(spec)
		if err != nil {
			return nil, fmt.Errorf("endpoint URL: %w", err)
		}
		q := u.Query()
		if q.Get("sig") == "" {
			return nil, errors.New("endpoint URL has no SAS (sig=…); give a connection string with AccountKey instead")
		}
		ep := &Endpoint{sas: q}
		path := strings.TrimRight(u.EscapedPath(), "/")
		if tn := q.Get("tn"); tn != "" {
			if err := checkTable("SAS tn", tn); err != nil {
				return nil, err
			}
			ep.Table = tn
			if i := strings.LastIndexByte(path, '/'); i >= 0 && strings.EqualFold(path[i+1:], tn) {
				path = path[:i]
			}
		}
		ep.Base = u.Scheme + "://" + u.Host + path
		ep.Account = accountOf(u.Host, path)
		return ep, nil
	}
	kv := map[string]string{}
	for _, part := range strings.Split(spec, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("connection string: %q is not Key=Value", part)
		}
		kv[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	if strings.EqualFold(kv["usedevelopmentstorage"], "true") {
		base := "http://127.0.0.1:10002/devstoreaccount1"
		if p := kv["developmentstorageproxyuri"]; p != "" {
			base = strings.TrimRight(p, "/") + ":10002/devstoreaccount1"
		}
		kv["tableendpoint"], kv["accountname"], kv["accountkey"] = base, "devstoreaccount1", DevKey
	}
	ep := &Endpoint{Account: kv["accountname"]}
	base := kv["tableendpoint"]
	if base == "" {
		if ep.Account == "" {
			return nil, errors.New("connection string: neither TableEndpoint nor AccountName")
		}
		proto := kv["defaultendpointsprotocol"]
		if proto == "" {
			proto = "https"
		}
		suffix := kv["endpointsuffix"]
		if suffix == "" {
			suffix = "core.windows.net"
		}
		base = proto + "://" + ep.Account + ".table." + suffix
	}
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("connection string: TableEndpoint %q is not an http(s) URL", base)
	}
	ep.Base = u.Scheme + "://" + u.Host + u.EscapedPath()
	if ep.Account == "" {
		ep.Account = accountOf(u.Host, u.EscapedPath())
	}
	switch {
	case kv["sharedaccesssignature"] != "":
		q, err := url.ParseQuery(strings.TrimPrefix(kv["sharedaccesssignature"], "?"))
		if err != nil || q.Get("sig") == "" {
			return nil, errors.New("connection string: SharedAccessSignature is not a SAS query")
		}
		ep.sas = q
		ep.Table = q.Get("tn")
		if ep.Table != "" {
			if err := checkTable("SAS tn", ep.Table); err != nil {
				return nil, err
			}
		}
	case kv["accountkey"] != "":
		k, err := base64.StdEncoding.DecodeString(kv["accountkey"])
		if err != nil || len(k) == 0 {
			return nil, errors.New("connection string: AccountKey is not base64")
		}
		ep.key = k
		if ep.Account == "" {
			return nil, errors.New("connection string: AccountKey without AccountName")
		}
	default:
		return nil, errors.New("connection string: no AccountKey or SharedAccessSignature")
	}
	return ep, nil
}

// checkTable refuses a name that is not a valid Table service table name
// (3 to 63 letters and digits, starting with a letter). Table names come
// from the source (its table list, a file's "table" field) and go into URL
// paths and file names: a listed "../../x" made an export write outside its
// folder. what says whose name it is, e.g. "source".
func checkTable(what, name string) error {
	if tablestore.ValidateTableName(name) != nil {
		if partita.SameTable(name, "tables") {
			return fmt.Errorf("%s: table name %q is reserved (it names the service's list of tables)", what, name)
		}
		return fmt.Errorf("%s: table name %q is not a valid table name (3 to 63 letters and digits, starting with a letter)", what, name)
	}
	return nil
}

// accountOf names the account: the first path segment (path style) or the
// host's first label (host style).
func accountOf(host, path string) string {
	if p := strings.Trim(path, "/"); p != "" {
		if i := strings.IndexByte(p, '/'); i >= 0 {
			p = p[:i]
		}
		return p
	}
	h := host
	if i := strings.IndexByte(h, ':'); i >= 0 {
		h = h[:i]
	}
	if i := strings.IndexByte(h, '.'); i >= 0 {
		return h[:i]
	}
	return h
}

// String describes the endpoint without its secret.
func (e *Endpoint) String() string { return e.Base }

// client is an HTTP client of one endpoint with retries.
type client struct {
	ep   *Endpoint
	hc   *http.Client
	u    *url.URL
	side string // "source" or "destination", for messages
	// Retries counts requests retried (retryStatus, or a network error).
	retries func()
	// maxAttempts bounds the tries of one request.
	maxAttempts int
	// headerTimeout bounds the wait for a response's headers (a Table
	// service sends them at once; a query page's body may take longer),
	// idleTimeout a body's silence, requestTimeout a whole request (long:
	// a genuine page of large entities over a slow link may take minutes,
	// and the idle timeout already ends one that stops). An endpoint that
	// accepted and never answered once held a copy for a 2-minute request
	// timeout times 10 attempts.
	headerTimeout, idleTimeout, requestTimeout time.Duration
	// maxBody bounds a response body (maxResponse; tests set less), and
	// past largeBody (largeResponse; tests set less) a body is read
	// holding largeGate.
	maxBody, largeBody int64
}

// The client's timeouts (setTimeouts; tests set shorter ones).
const (
	headerTimeout  = 30 * time.Second
	idleTimeout    = 60 * time.Second
	requestTimeout = 10 * time.Minute
)

// maxTimeouts bounds the tries of one request that timed out: an endpoint
// that did not answer three times will not.
const maxTimeouts = 3

// setTimeouts sets the header and body idle timeouts.
func (c *client) setTimeouts(header, idle time.Duration) {
	c.headerTimeout, c.idleTimeout = header, idle
	c.hc.Transport.(*http.Transport).ResponseHeaderTimeout = header
}

// fatalError is a failure that trying again would only repeat, so do()
// does not: a response body beyond maxBody (a 1.1 GB answer, retried, was
// downloaded 10 times and took 7.4 GB of memory), a redirect.
type fatalError struct{ msg string }

func (e *fatalError) Error() string { return e.msg }

// timeoutError is a request that timed out; the message names the timeout.
type timeoutError struct{ msg string }

func (e *timeoutError) Error() string { return e.msg }

func newClient(ep *Endpoint, side string, conns int) *client {
	u, _ := url.Parse(ep.Base)
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2 * conns,
		MaxIdleConnsPerHost: 2 * conns,
		IdleConnTimeout:     4 * time.Second, // under Azurite's 5 s keep-alive
		WriteBufferSize:     64 << 10,
		ReadBufferSize:      64 << 10,
		// No Accept-Encoding, so no transparent gzip: a Table service does
		// not compress, and a source that did could send a megabyte that
		// unpacks to the gigabyte bound, per request (once()).
		DisableCompression: true,
	}
	// A Table service never redirects; following one would read from or
	// write to whatever host it names, credentials and all.
	noRedirect := func(req *http.Request, _ []*http.Request) error {
		return &fatalError{fmt.Sprintf("refusing a redirect to %s: a Table service does not redirect", req.URL.Redacted())}
	}
	c := &client{ep: ep, hc: &http.Client{Transport: tr, CheckRedirect: noRedirect}, u: u, side: side, retries: func() {}, maxAttempts: 10, requestTimeout: requestTimeout, maxBody: maxResponse, largeBody: largeResponse}
	c.setTimeouts(headerTimeout, idleTimeout)
	return c
}

// ServiceError is a response with an error status.
type ServiceError struct {
	Side    string
	Method  string
	Path    string
	Status  int
	Code    string
	Message string
}

func (e *ServiceError) Error() string {
	msg := e.Message
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if msg == "" { // a body without an error message (a bare 500)
		return fmt.Sprintf("%s: %s %s: %d %s", e.Side, e.Method, e.Path, e.Status, e.Code)
	}
	return fmt.Sprintf("%s: %s %s: %d %s: %s", e.Side, e.Method, e.Path, e.Status, e.Code, msg)
}

// parseError reads the odata.error (JSON) or XML error body.
func parseError(side, method, path string, status int, body []byte) *ServiceError {
	se := &ServiceError{Side: side, Method: method, Path: path, Status: status}
	var j struct {
		Err struct {
			Code    string `json:"code"`
			Message struct {
				Value string `json:"value"`
			} `json:"message"`
		} `json:"odata.error"`
	}
	if json.Unmarshal(body, &j) == nil && j.Err.Code != "" {
		se.Code, se.Message = j.Err.Code, j.Err.Message.Value
		return se
	}
	s := string(body)
	if i, k := strings.Index(s, "<Code>"), strings.Index(s, "</Code>"); i >= 0 && k > i {
		se.Code = s[i+6 : k]
	}
	if i, k := strings.Index(s, "<Message>"), strings.Index(s, "</Message>"); i >= 0 && k > i {
		se.Message = s[i+9 : k]
	}
	if se.Code == "" {
		se.Code = http.StatusText(status)
		if len(s) > 200 {
			s = s[:200]
		}
		se.Message = strings.TrimSpace(s)
	}
	return se
}

type request struct {
	method      string
	path        string // escaped, after the endpoint base, starting with '/'
	query       string // raw query without the SAS
	body        []byte
	contentType string
	prefer      string
}

type response struct {
	status int
	header http.Header
	body   []byte
	buf    *bytes.Buffer // body's pooled buffer, for release
}

// retryStatus reports a status the Azure SDKs' retry policies retry: a
// busy or failing service (500, 503), a gateway's (502, 504), a timeout
// (408) and throttling (429, which proxies and other services send).
func retryStatus(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// maxRetryAfter bounds the wait an answer may ask for.
const maxRetryAfter = time.Minute

// retryAfter is the wait an answer asks for, 0 for none (or one past
// maxRetryAfter, which is not believed): x-ms-retry-after-ms or
// retry-after-ms in milliseconds (as the SDKs read them first), else
// Retry-After in seconds or as an HTTP date.
func retryAfter(h http.Header, now time.Time) time.Duration {
	for _, name := range []string{"X-Ms-Retry-After-Ms", "Retry-After-Ms"} {
		if v := h.Get(name); v != "" {
			if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms >= 0 && ms <= maxRetryAfter.Milliseconds() {
				return time.Duration(ms) * time.Millisecond
			}
			return 0
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s >= 0 && s <= int64(maxRetryAfter/time.Second) {
			return time.Duration(s) * time.Second
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 && d <= maxRetryAfter {
			return d
		}
	}
	return 0
}

// do sends r, retrying the statuses retryStatus names and network errors
// with backoff that honours the wait the answer asks for (retryAfter).
// Any other status is returned as is.
func (c *client) do(ctx context.Context, r *request) (*response, error) {
	var last error
	timeouts := 0
	for attempt := 0; attempt < c.maxAttempts; attempt++ {
		if attempt > 0 {
			c.retries()
		}
		resp, err := c.once(ctx, r)
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			var fe *fatalError
			if errors.As(err, &fe) {
				return nil, fmt.Errorf("%s: %s: %w", c.side, c.ep.Base, err)
			}
			last = fmt.Errorf("%s: cannot reach %s: %w", c.side, c.ep.Base, err)
			var te *timeoutError
			if errors.As(err, &te) {
				if timeouts++; timeouts >= maxTimeouts {
					return nil, last
				}
			}
		case retryStatus(resp.status):
			last = parseError(c.side, r.method, r.path, resp.status, resp.body)
			wait = retryAfter(resp.header, time.Now())
		default:
			return resp, nil
		}
		if wait == 0 {
			wait = 100 * time.Millisecond << min(attempt, 6)
			wait = wait/2 + rand.N(wait/2+1)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
	return nil, last
}

func (c *client) once(ctx context.Context, r *request) (*response, error) {
	rawPath := c.u.EscapedPath() + r.path
	query := r.query
	h := http.Header{
		"X-Ms-Version":          {apiVersion},
		"Accept":                {"application/json;odata=fullmetadata"},
		"Dataserviceversion":    {"3.0"},
		"Maxdataserviceversion": {"3.0;NetFx"},
	}
	if c.ep.sas != nil {
		s := c.ep.sas.Encode()
		if query != "" {
			query += "&" + s
		} else {
			query = s
		}
	} else {
		date := time.Now().UTC().Format(http.TimeFormat)
		h["X-Ms-Date"] = []string{date}
		res := "/" + c.ep.Account + rawPath
		if rawPath == "" {
			res += "/"
		}
		h["Authorization"] = []string{"SharedKeyLite " + c.ep.Account + ":" + auth.Sign(c.ep.key, auth.StringToSignLite(date, res))}
	}
	if r.contentType != "" {
		h["Content-Type"] = []string{r.contentType}
	}
	if r.prefer != "" {
		h["Prefer"] = []string{r.prefer}
	}
	req := &http.Request{
		Method:     r.method,
		URL:        &url.URL{Scheme: c.u.Scheme, Host: c.u.Host, Opaque: rawPath, RawQuery: query},
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     h,
		Host:       c.u.Host,
	}
	if r.body != nil {
		b := r.body
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		req.ContentLength = int64(len(b))
	} else if r.method == http.MethodPost || r.method == http.MethodPut {
		req.Body = http.NoBody
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, c.requestTimeout)
	defer cancel()
	resp, err := c.hc.Do(req.WithContext(ctx))
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if strings.Contains(err.Error(), "timeout awaiting response headers") {
			return nil, &timeoutError{fmt.Sprintf("%s %s: no response headers within %s (response header timeout)", r.method, r.path, c.headerTimeout)}
		}
		if parent.Err() == nil && ctx.Err() != nil {
			return nil, &timeoutError{fmt.Sprintf("%s %s: no response within %s (request timeout)", r.method, r.path, c.requestTimeout)}
		}
		return nil, err
	}
	defer resp.Body.Close()
	// A body that stops coming ends the request after idleTimeout of
	// silence; one that keeps coming, however slowly, is read on.
	var idled atomic.Bool
	idle := time.AfterFunc(c.idleTimeout, func() { idled.Store(true); cancel() })
	defer idle.Stop()
	body := &idleReader{r: resp.Body, t: idle, d: c.idleTimeout}
	// A query page holds at most 1,000 entities of at most 1 MiB each in
	// their JSON form; a body beyond maxResponse is not a Table service's.
	// Read into a pooled buffer: a query page is megabytes, and growing a
	// fresh slice for each (io.ReadAll) was a tenth of an export's CPU.
	tooLarge := func() error {
		return &fatalError{fmt.Sprintf("%s %s: the response is larger than %d MiB, which no Table service sends (not retried)", r.method, r.path, c.maxBody>>20)}
	}
	if resp.ContentLength > c.maxBody {
		return nil, tooLarge() // said so up front: not downloaded
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return nil, &fatalError{fmt.Sprintf("%s %s: the response is encoded (Content-Encoding: %.40q), which partita copy does not ask for and a Table service does not send (not retried)", r.method, r.path, ce)}
	}
	buf := bodyPool.Get().(*bytes.Buffer)
	buf.Reset()
	if resp.ContentLength > 0 {
		// Room for the declared length, up to maxPregrow: a length is
		// only a claim (one of 1 GiB followed by nothing made a gigabyte's
		// allocation), and past it the buffer grows as bytes come (pooled
		// buffers keep their room from one page to the next).
		buf.Grow(int(min(resp.ContentLength, maxPregrow)) + 1)
	}
	// Up to largeBody as it comes; past it, one body at a time: each
	// reader growing its own buffer towards the gigabyte bound (doubling
	// it, the old copy alive meanwhile) took a copy's memory to 4 GiB per
	// parallel reader, for a source sending pages of nothing.
	_, err = buf.ReadFrom(io.LimitReader(body, min(c.maxBody, c.largeBody)+1))
	if err == nil && int64(buf.Len()) > c.largeBody && c.maxBody > c.largeBody {
		select {
		case largeGate <- struct{}{}:
			_, err = buf.ReadFrom(io.LimitReader(body, c.maxBody-int64(buf.Len())+1))
			<-largeGate
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err != nil {
		if buf.Cap() <= maxPooled {
			bodyPool.Put(buf)
		}
		switch {
		case idled.Load():
			return nil, &timeoutError{fmt.Sprintf("%s %s: no bytes of the response body for %s (body idle timeout)", r.method, r.path, c.idleTimeout)}
		case parent.Err() == nil && ctx.Err() != nil:
			return nil, &timeoutError{fmt.Sprintf("%s %s: the response took longer than %s (request timeout)", r.method, r.path, c.requestTimeout)}
		}
		return nil, err
	}
	if int64(buf.Len()) > c.maxBody {
		return nil, tooLarge()
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: buf.Bytes(), buf: buf}, nil
}

// idleReader restarts t (idleTimeout's timer) with d on every read that
// brings bytes.
type idleReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (ir *idleReader) Read(p []byte) (int, error) {
	n, err := ir.r.Read(p)
	if n > 0 {
		ir.t.Reset(ir.d)
	}
	return n, err
}

// bodyPool holds response buffers between requests.
var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// release returns the body's buffer to the pool; the caller keeps nothing
// that points into body.
func (r *response) release() {
	if r.buf != nil && r.buf.Cap() <= maxPooled {
		bodyPool.Put(r.buf)
	}
	r.buf, r.body = nil, nil
}

// largeResponse is the size past which a response body is read while
// holding largeGate, which one body at a time may hold: pages larger than
// that (a thousand entities of 64 KiB and more) are rare.
const largeResponse = 64 << 20

var largeGate = make(chan struct{}, 1)

// maxPregrow bounds the room made ahead for a declared body length.
const maxPregrow = 16 << 20

// maxPooled keeps a rare huge body's buffer out of the pool.
const maxPooled = 64 << 20

// maxResponse bounds a response body read into memory. A page holds at most
// 1,000 entities of at most 1 MiB of properties each: a lower bound could
// refuse legitimate data, so the bound stays, and a page of more entities
// than that is refused (queryRaw) instead.
const maxResponse = 1 << 30

func (c *client) fail(r *request, resp *response) *ServiceError {
	return parseError(c.side, r.method, r.path, resp.status, resp.body)
}

// queryEscape escapes a query parameter value (spaces as %20).
func queryEscape(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }

// Check makes one cheap authenticated request, so that wrong credentials or
// an unreachable endpoint fail before any data moves.
func (c *client) Check(ctx context.Context) error {
	saved := c.maxAttempts
	c.maxAttempts = 3
	defer func() { c.maxAttempts = saved }()
	r := &request{method: http.MethodGet, path: "/Tables", query: "$top=1"}
	if c.ep.Table != "" {
		r = &request{method: http.MethodGet, path: "/" + c.ep.Table + "()", query: "$top=1"}
	}
	resp, err := c.do(ctx, r)
	if err != nil {
		return err
	}
	if resp.status == http.StatusOK {
		return nil
	}
	se := c.fail(r, resp)
	// A write-only table SAS may not read: that is not a credential error.
	if se.Status == http.StatusForbidden && se.Code == "AuthorizationPermissionMismatch" && c.ep.Table != "" {
		return nil
	}
	if se.Status == http.StatusForbidden || se.Status == http.StatusUnauthorized {
		return fmt.Errorf("%s: %s rejected the credentials: %d %s", c.side, c.ep.Base, se.Status, se.Code)
	}
	return se
}

// ListTables returns the names of the account's tables (or the SAS's one).
func (c *client) ListTables(ctx context.Context) ([]string, error) {
	if c.ep.Table != "" {
		return []string{c.ep.Table}, nil
	}
	var names []string
	listed := map[string]bool{} // lower-case names: as many as names
	var tokens scanTokens
	next := ""
	for pages := 0; ; pages++ {
		// Bounded while reading, not after: a source may list without
		// end, in empty pages too.
		if pages > maxTables {
			return nil, fmt.Errorf("%s: list tables: more than %d pages: the source makes no progress", c.side, maxTables)
		}
		r := &request{method: http.MethodGet, path: "/Tables"}
		if next != "" {
			r.query = "NextTableName=" + queryEscape(next)
		}
		resp, err := c.do(ctx, r)
		if err != nil {
			return nil, err
		}
		if resp.status != http.StatusOK {
			return nil, c.fail(r, resp)
		}
		var v struct {
			Value []struct {
				TableName string
			} `json:"value"`
		}
		if err := json.Unmarshal(resp.body, &v); err != nil {
			return nil, fmt.Errorf("%s: list tables: %w", c.side, err)
		}
		for _, t := range v.Value {
			if err := checkTable(c.side, t.TableName); err != nil {
				return nil, err
			}
		}
		sent := next
		next = resp.header.Get("x-ms-continuation-NextTableName")
		switch {
		case next == "":
		case next == sent:
			return nil, fmt.Errorf("%s: list tables: the continuation (NextTableName=%q) came back unchanged: the source makes no progress", c.side, next)
		case len(v.Value) > 0:
			tokens.reset()
		case tokens.seen(next):
			return nil, fmt.Errorf("%s: list tables: the continuation (NextTableName=%q) came back after other empty pages: the source makes no progress", c.side, next)
		}
		for _, t := range v.Value {
			// Table names are case-insensitive; a name twice would be
			// copied twice (into one export file, each entity twice).
			lower := strings.ToLower(t.TableName)
			if listed[lower] {
				return nil, fmt.Errorf("%s: list tables: table %q is listed twice: a Table service lists each table once", c.side, t.TableName)
			}
			listed[lower] = true
			names = append(names, t.TableName)
		}
		// Bounded while reading, not after: a source may list without end.
		if len(names) > maxTables {
			return nil, fmt.Errorf("%s: more than %d tables; select some with --tables", c.side, maxTables)
		}
		if next == "" {
			return names, nil
		}
	}
}

// CreateTable creates name; an existing table is fine.
func (c *client) CreateTable(ctx context.Context, name string) error {
	if c.ep.Table != "" {
		return nil // a table SAS cannot create tables; the table exists
	}
	body, _ := json.Marshal(map[string]string{"TableName": name})
	r := &request{method: http.MethodPost, path: "/Tables", body: body, contentType: "application/json", prefer: "return-no-content"}
	resp, err := c.do(ctx, r)
	if err != nil {
		return err
	}
	switch resp.status {
	case http.StatusCreated, http.StatusNoContent, http.StatusConflict:
		if resp.status == http.StatusConflict {
			if se := c.fail(r, resp); se.Code != "TableAlreadyExists" {
				return se
			}
		}
		return nil
	}
	return c.fail(r, resp)
}
