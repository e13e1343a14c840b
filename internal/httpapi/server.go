// Package httpapi is partita's HTTP edge: it authenticates requests, routes
// them to the partita.Store, encodes responses, and is the only place where
// errors become statuses, codes and bodies (errors.go).
package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/advisor"
	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/metrics"
	"github.com/partita/partita/internal/wire"
)

// Options configure a Server.
type Options struct {
	Store    partita.Store
	Accounts auth.Keyring
	Logger   *slog.Logger
	// Now is the clock (tests). Default time.Now.
	Now func() time.Time
	// MaxInFlight bounds the requests served at once (default 256). A
	// request that finds no slot within QueueWait (default 1s) gets
	// 503 ServerBusy with Retry-After, which every SDK retries.
	MaxInFlight int
	QueueWait   time.Duration
	// MaxBodyBytes bounds the request bodies held in memory at once
	// (default 64 MiB). A request reserves its Content-Length (its
	// operation's maximum when the length is not declared) before its
	// body is read; one that finds no room within QueueWait gets
	// 503 ServerBusy with Retry-After.
	MaxBodyBytes int64
	// ClientShare is the percentage (default 50) of the request slots
	// and of MaxBodyBytes that one account may hold when more than one is
	// configured, and that one shared access signature may hold of its
	// account's part, so that a client cannot starve the others.
	ClientShare int
	// BodyTimeout and BodyMinRate bound how long a body may take to
	// arrive: BodyTimeout plus its length at BodyMinRate bytes a second
	// (defaults 10s and 64 KiB/s).
	BodyTimeout time.Duration
	BodyMinRate int64
	// Console, when set, serves every request whose path starts with
	// ConsolePrefix, on any host (the web console's static files).
	Console http.Handler
	// Metrics, when set, records every request (internal/metrics);
	// Advisor, when set, watches the traffic for key-design
	// anti-patterns (internal/advisor).
	Metrics *metrics.Metrics
	Advisor *advisor.Advisor
	// MaxTimeout is the longest server timeout (default DefaultMaxTimeout,
	// the service's 30 s): the `timeout` query parameter is reduced to it.
	// A request that gives `timeout` gets a deadline on its context, and
	// a store call that has not finished by then fails with
	// context.DeadlineExceeded, which is 500 OperationTimedOut.
	MaxTimeout time.Duration
	// DeadlineByDefault gives every request without `timeout` the
	// deadline MaxTimeout (the service's default for writes). Set it for
	// engines whose calls can wait indefinitely (PostgreSQL, whose commit
	// waits for a synchronous standby); Pebble's writes cannot be
	// canceled once in its commit pipeline and its reads do not wait, so
	// without it a request that gives no `timeout` costs no deadline.
	DeadlineByDefault bool
	// StoreCalls bounds the store calls in flight at once (0: no bound),
	// shared among principals as the request slots are: with more than
	// one account configured one account may hold ClientShare of them,
	// and one shared access signature that share of its account's part.
	// A call beyond its share waits, until the request's deadline at
	// most. Set it to the PostgreSQL engine's pool size: each call holds
	// a pool connection while it runs, and the pool is smaller than the
	// slots one account may hold, so without it one account's slow calls
	// could take every connection (storegate.go).
	StoreCalls int
}

// ConsolePrefix is the path of the web console on the main listener. No
// account or table name can start with '_', so it shadows nothing.
const ConsolePrefix = "/_partita/console"

// Server serves the Table REST API.
type Server struct {
	store     partita.Store
	keys      auth.Keyring
	log       *slog.Logger
	now       func() time.Time
	slots     *budget // requests in flight
	bodies    *budget // request-body bytes in memory
	calls     *budget // store calls in flight; nil when not bounded
	share     int
	queueWait time.Duration
	bodyWait  time.Duration
	bodyRate  int64
	date      atomic.Pointer[cachedDate]
	corsCache corsCache // the accounts' CORS rules, for corsHeaders
	aclCache  aclCache  // tables' stored access policies, for a SAS's si
	console   http.Handler
	metrics   *metrics.Metrics
	advisor   *advisor.Advisor
	// maxTimeout and alwaysDeadline: Options.MaxTimeout and
	// Options.DeadlineByDefault.
	maxTimeout     time.Duration
	alwaysDeadline bool
}

// New returns a Server.
func New(o Options) *Server {
	s := &Server{store: o.Store, keys: o.Accounts, log: orDefault(o.Logger), now: o.Now, queueWait: o.QueueWait,
		share: o.ClientShare, bodyWait: o.BodyTimeout, bodyRate: o.BodyMinRate, console: o.Console,
		metrics: o.Metrics, advisor: o.Advisor, maxTimeout: o.MaxTimeout, alwaysDeadline: o.DeadlineByDefault}
	if s.maxTimeout <= 0 {
		s.maxTimeout = DefaultMaxTimeout
	}
	if s.now == nil {
		s.now = time.Now
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 256
	}
	if s.queueWait <= 0 {
		s.queueWait = time.Second
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 64 << 20
	}
	if s.share <= 0 || s.share > 100 {
		s.share = 50
	}
	if s.bodyWait <= 0 {
		s.bodyWait = 10 * time.Second
	}
	if s.bodyRate <= 0 {
		s.bodyRate = 64 << 10
	}
	s.corsCache.init(s)
	s.aclCache.init(s)
	s.slots = newBudget(int64(o.MaxInFlight))
	o.Metrics.InFlightFrom(s.slots.inUse)
	s.bodies = newBudget(o.MaxBodyBytes)
	if o.StoreCalls > 0 {
		s.calls = newBudget(int64(o.StoreCalls))
		s.store = &gatedStore{Store: s.store, calls: s.calls, metrics: o.Metrics}
		o.Metrics.StoreCallsFrom(s.calls.inUse)
	}
	return s
}

// reqCtx is what the handlers of one request share.
type reqCtx struct {
	// ctx is the context of the request's store calls: the request's
	// own, with the server timeout's deadline when there is one.
	ctx     context.Context
	id      string
	op      string
	account string
	// base is the service root as the client addressed it.
	base string
	// resource is the raw (still escaped) path after the account prefix,
	// without the leading '/'.
	resource string
	query    url.Values
	meta     wire.Metadata
	xml      bool
	// sas is the request's shared access signature; nil for account keys.
	sas *auth.SAS
	// secondary is set when the request addressed the -secondary endpoint.
	secondary bool
	// parsed is resource parsed (resourceOf), once for preauthorize and
	// route alike.
	parsed    resource
	parsedErr error
	hasParsed bool
	// bodyPending is set while an HTTP/1 request has a body that was not
	// read to its end; an error response then closes the connection, so
	// that net/http does not read what the handler refused.
	bodyPending bool
	// bodyHeld is what the request reserved of the body budget, under
	// bodyClaims, until it ends.
	bodyHeld   int64
	bodyClaims []claim
	// With metrics: the response writer that counts the status and the
	// bytes out, the body bytes read, and whether a 503 was counted.
	cw        countingWriter
	start     time.Time
	bytesIn   int64
	busyNoted bool
}

func newRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:])
	return string(out[:])
}

// validVersion accepts any x-ms-version that is a date, YYYY-MM-DD: the
// versions SDKs newer than partita send are dates too.
func validVersion(v string) bool {
	if len(v) != 10 || v[4] != '-' || v[7] != '-' {
		return false
	}
	for i, c := range v {
		if i != 4 && i != 7 && (c < '0' || c > '9') {
			return false
		}
	}
	month := int(v[5]-'0')*10 + int(v[6]-'0')
	day := int(v[8]-'0')*10 + int(v[9]-'0')
	return month >= 1 && month <= 12 && day >= 1 && day <= 31
}

// splitAccount finds the account and the resource path, path style or
// host style (docs/COMPATIBILITY.md §2).
func splitAccount(host, rawPath string) (account, signing, resource, prefix string, ok bool) {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.Trim(h, "[]")
	hostStyle := net.ParseIP(h) == nil && h != "localhost" && strings.Contains(h, ".") && h != "host.docker.internal"
	p := strings.TrimPrefix(rawPath, "/")
	if hostStyle {
		label, _, _ := strings.Cut(h, ".")
		return strings.TrimSuffix(label, "-secondary"), label, p, "", label != ""
	}
	seg, rest, _ := strings.Cut(p, "/")
	if seg == "" {
		return "", "", "", "", false
	}
	return strings.TrimSuffix(seg, "-secondary"), seg, rest, "/" + seg, true
}

// secondaryServiceRoot recognizes the Python SDK's path-style secondary
// service root: for Get Service Stats against the endpoint
// http://host/<acct> it sends GET /<acct>-secondary/<acct>/?restype=service&comp=stats
// (the primary's path under a first segment of its own making) and signs
// it as the primary request, over the canonicalized resource
// /<acct>/<acct>/?comp=stats. Only that form, which no table path can take
// (a table's resource has no '/' after its name, and restype=service is
// no table operation's), is the service root of <acct>'s secondary; it
// returns the path to verify the signature over, /<acct>/.
func secondaryServiceRoot(account, signing, resource, prefix string, q url.Values) (authPath string, ok bool) {
	if prefix == "" || signing != account+"-secondary" || q.Get("restype") != "service" {
		return "", false
	}
	if resource != account+"/" {
		return "", false
	}
	return "/" + resource, true
}

// Header names in canonical form (what http.Header.Set would make of them),
// so that setting them skips canonicalization, and shared values of the
// headers every response carries. net/http only reads a response's header
// slices, so sharing them between responses is safe.
const (
	hdrETag        = "Etag"
	hdrRequestID   = "X-Ms-Request-Id"
	hdrVersion     = "X-Ms-Version"
	hdrClientReqID = "X-Ms-Client-Request-Id"
	hdrQueryClass  = "X-Partita-Query-Class"
	hdrExamined    = "X-Partita-Entities-Examined"

	hdrPreferenceApplied = "Preference-Applied"
	hdrLocation          = "Location"
	hdrDataServiceID     = "Dataserviceid" // as Set("DataServiceId") spells it on the wire
)

var (
	valNosniff = []string{"nosniff"}
	valServer  = []string{"partita/" + partita.Version}
	valNoCache = []string{"no-cache"}

	valReturnNoContent = []string{"return-no-content"}
	valReturnContent   = []string{"return-content"}
)

// dateHeader is the Date header for now, formatted once per second.
func (s *Server) dateHeader() []string {
	now := s.now()
	sec := now.Unix()
	if d := s.date.Load(); d != nil && d.sec == sec {
		return d.val
	}
	d := &cachedDate{sec: sec, val: []string{now.UTC().Format(http.TimeFormat)}}
	s.date.Store(d)
	return d.val
}

type cachedDate struct {
	sec int64
	val []string
}

// bodyDeadline is when a body of n bytes must have arrived: --body-timeout
// plus its length at --body-min-rate-kb.
func (s *Server) bodyDeadline(n int64) time.Time {
	return time.Now().Add(s.bodyWait + time.Duration(n*int64(time.Second)/s.bodyRate))
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == "PRI" && r.ProtoMajor == 2 {
		// The preface of cleartext HTTP/2 (h2c with prior knowledge),
		// which net/http hands on as a request: partita speaks HTTP/1.1
		// only, as the service does, and says so.
		w.Header().Set("Connection", "close")
		http.Error(w, "HTTP/2 is not supported: use HTTP/1.1", http.StatusHTTPVersionNotSupported)
		return
	}
	if s.console != nil && strings.HasPrefix(r.URL.Path, ConsolePrefix) {
		if r.ContentLength != 0 && r.ProtoMajor < 2 {
			// The console's files take no body, and nothing has
			// authenticated this one: it must not hold the connection.
			LeaveBodyUnread(w)
		}
		s.console.ServeHTTP(w, r)
		return
	}
	rc := &reqCtx{id: newRequestID(), op: "Unknown"}
	if s.metrics != nil || s.advisor != nil {
		rc.start = time.Now()
	}
	if s.metrics != nil {
		rc.cw.ResponseWriter = w
		w = &rc.cw
		defer s.observe(w, rc)
	}
	h := w.Header()
	h[hdrRequestID] = []string{rc.id}
	version := r.Header.Get(hdrVersion)
	if version == "" {
		version = "2019-02-02"
	}
	h[hdrVersion] = []string{version}
	h["Date"] = s.dateHeader()
	h["X-Content-Type-Options"] = valNosniff
	h["Server"] = valServer
	if id := r.Header.Get(hdrClientReqID); id != "" {
		h[hdrClientReqID] = []string{id}
	}
	// HTTP/2 resets the stream of an unread body by itself, and would take
	// Connection: close as a shutdown of every stream of the connection.
	rc.bodyPending = r.ContentLength != 0 && r.ProtoMajor < 2
	if rc.bodyPending && (r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodDelete) {
		// No handler reads a body here, but net/http discards up to 256
		// KiB of one before a response larger than its buffer, inside the
		// handler, holding its slot: give that the deadline readBody gives
		// a body, not the server's 2-minute read timeout. (The writes'
		// bodies get it from readBody, or are refused with the connection
		// closed.)
		n := r.ContentLength
		if n < 0 || n > 4<<20 { // chunked, or too large to be waited for
			n = 4 << 20
		}
		http.NewResponseController(w).SetReadDeadline(s.bodyDeadline(n))
	}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.writeError(w, rc, fmt.Errorf("panic: %v", v))
		}
	}()
	if err := s.serve(w, r, rc, version); err != nil {
		s.writeError(w, rc, err)
	}
}

// errBadQueryParameter is the service's answer to a query string that does
// not decode.
var errBadQueryParameter = partita.NewError(partita.CodeInvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid.")

// parseQuery decodes a query string. A ';' is a character of a value, as
// the service reads it ($format=application/json;odata=nometadata written
// as in its documentation), not a separator, which net/url refuses.
func parseQuery(raw string) (url.Values, error) {
	if strings.IndexByte(raw, ';') >= 0 {
		raw = strings.ReplaceAll(raw, ";", "%3B")
	}
	return url.ParseQuery(raw)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, rc *reqCtx, version string) error {
	rawPath, rawQuery, _ := strings.Cut(r.RequestURI, "?")
	if !strings.HasPrefix(r.RequestURI, "/") { // absolute form, through a proxy
		if u, err := url.Parse(r.RequestURI); err == nil && u.IsAbs() {
			rawPath, rawQuery = u.EscapedPath(), u.RawQuery
		}
	}
	q, err := parseQuery(rawQuery)
	if err != nil {
		return errBadQueryParameter
	}
	rc.query = q
	if q.Get("comp") != "" || q.Get("restype") != "" {
		rc.xml = true
	}
	meta, err := negotiate(r.Header.Get("Accept"), q, rc.xml)
	if err != nil {
		return err
	}
	if !rc.xml && r.Method != http.MethodGet && r.Method != http.MethodHead && atomBody(r.Header.Get("Content-Type")) {
		return errAtom // an Atom body is refused as an Atom answer is
	}
	rc.meta = meta
	if !validVersion(version) {
		return partita.NewError(partita.CodeInvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format.")
	}
	account, signing, resource, prefix, ok := splitAccount(r.Host, rawPath)
	if !ok {
		return partita.NewError(partita.CodeInvalidInput, partita.MsgInvalidInput)
	}
	authPath := rawPath
	if p, ok := secondaryServiceRoot(account, signing, resource, prefix, q); ok {
		authPath, resource, prefix = p, "", prefix+"/"+account
	}
	rc.account = account
	rc.resource = resource
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	host := r.Host
	if host == "" {
		// HTTP/1.0 without Host, or an empty Host header: the address the
		// request came to, not "http:///…" in Location and odata.id.
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			host = a.String()
		}
	}
	rc.base = scheme + "://" + host + prefix

	rc.secondary = strings.HasSuffix(signing, "-secondary")
	if r.Method == http.MethodOptions {
		return s.handlePreflight(w, r, rc)
	}
	// The server timeout runs from here: authentication may read a
	// stored access policy, and waiting for a slot is part of the time
	// the request takes. One deadline covers the whole request, so a
	// $batch's changeset has one.
	timeout, given, err := requestTimeout(q, s.maxTimeout)
	if err != nil {
		return err
	}
	rc.ctx = r.Context()
	if given || s.alwaysDeadline {
		var cancel context.CancelFunc
		rc.ctx, cancel = context.WithTimeout(rc.ctx, timeout)
		defer cancel()
	}
	// Who sent the request, and whether a SAS may do what it asks, are
	// established from its headers and URL alone, before it takes a slot
	// or has its body read.
	if err := s.authenticate(r, rc, authPath, q, signing); err != nil {
		return err
	}
	s.corsHeaders(w, r, rc)
	if err := s.preauthorize(r, rc); err != nil {
		return err
	}
	claims := s.claims(rc, s.slots)
	if s.metrics == nil {
		if !s.slots.take(1, s.queueWait, claims...) {
			return errBusy(w)
		}
	} else if s.slots.take(1, 0, claims...) {
		s.metrics.Admitted(0) // a free slot at once: no clock read
	} else {
		// Queue for a slot, timing the wait.
		queued := time.Now()
		if !s.slots.take(1, s.queueWait, claims...) {
			s.metrics.Busy("slots", time.Since(queued))
			rc.busyNoted = true
			return errBusy(w)
		}
		s.metrics.Admitted(time.Since(queued))
	}
	defer s.slots.give(1, claims...)
	if s.calls != nil {
		// The request's store calls count against its principals' share
		// of the store-call budget (gatedStore).
		rc.ctx = context.WithValue(rc.ctx, callClaimsKey{}, s.claims(rc, s.calls))
	}
	defer func() {
		if rc.bodyHeld > 0 {
			s.bodies.give(rc.bodyHeld, rc.bodyClaims...)
		}
	}()
	return s.route(w, r, rc)
}

// errBusy is 503 ServerBusy with Retry-After, which every SDK retries.
func errBusy(w http.ResponseWriter) error {
	w.Header().Set("Retry-After", "1")
	return partita.NewError(partita.CodeServerBusy, partita.MsgServerBusy)
}

// claims are the principals a request counts against in b: its account
// when there is more than one, which may hold the client share of b, and
// its shared access signature, which may hold the client share of what
// its account may (so the account's key holder keeps the rest). Both are
// authenticated, so clients cannot make up new ones.
func (s *Server) claims(rc *reqCtx, b *budget) []claim {
	limit := b.capacity
	var cs []claim
	if len(s.keys) > 1 {
		limit = share(limit, s.share)
		cs = append(cs, claim{key: "a/" + rc.account, limit: limit})
	}
	if rc.sas != nil {
		cs = append(cs, claim{key: "s/" + rc.account + "/" + rc.sas.ID(), limit: share(limit, s.share)})
	}
	return cs
}

// negotiate picks the JSON metadata level from $format or, without it,
// the Accept header. On entity and table operations a $format of Atom, or
// an Accept that names application/atom+xml or application/xml and no
// JSON (nor */*), asks for Atom, which partita does not serve (415); the
// XML operations (xmlOp: comp=, restype=) answer XML whatever is asked.
func negotiate(accept string, q url.Values, xmlOp bool) (wire.Metadata, error) {
	f := q.Get("$format")
	if f == "" {
		f = accept
	}
	if !xmlOp && asksAtom(f) {
		return 0, errAtom
	}
	switch {
	case strings.Contains(f, "odata=nometadata"):
		return wire.NoMetadata, nil
	case strings.Contains(f, "odata=fullmetadata"):
		return wire.FullMetadata, nil
	}
	return wire.MinimalMetadata, nil
}

var errAtom = partita.NewError(partita.CodeAtomFormatNotSupported, "Atom format is not supported.")

// atomBody reports whether a request's Content-Type says its body is
// Atom (application/atom+xml or application/xml), which entity and table
// operations refuse with 415, as the service does since Atom's end
// (version 2015-12-11). Any other type, or none, is read as JSON, as the
// SDKs label their bodies in several ways.
func atomBody(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.TrimSpace(mt)
	return strings.EqualFold(mt, "application/atom+xml") || strings.EqualFold(mt, "application/xml")
}

// asksAtom reports whether a $format or Accept value asks for Atom only:
// it names atom (the $format shorthand), application/atom+xml or
// application/xml, and no JSON media type or */* that partita could
// answer with instead.
func asksAtom(f string) bool {
	if f == "" || strings.Contains(f, "json") || strings.Contains(f, "*/*") {
		return false
	}
	return f == "atom" || strings.Contains(f, "application/atom+xml") || strings.Contains(f, "application/xml")
}

// readBody reads the request body, at most limit bytes. It first
// reserves the body's bytes in the body budget (503 ServerBusy when they
// do not fit within the queue wait), and gives the body a read deadline
// that grows with its length. A body that ends early or arrives too late
// is 400 InvalidInput; one over limit is 413 RequestBodyTooLarge, without
// reading it when Content-Length says so.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, rc *reqCtx, limit int64) ([]byte, error) {
	n := r.ContentLength
	if n == 0 {
		return []byte{}, nil
	}
	if n > limit {
		return nil, &http.MaxBytesError{Limit: limit}
	}
	reserve := n
	if n < 0 {
		reserve = limit
	}
	if rc.bodyHeld == 0 {
		claims := s.claims(rc, s.bodies)
		if !s.bodies.take(reserve, s.queueWait, claims...) {
			if s.metrics != nil {
				s.metrics.Busy("body", 0)
				rc.busyNoted = true
			}
			return nil, errBusy(w)
		}
		rc.bodyHeld, rc.bodyClaims = reserve, claims
	}
	ctl := http.NewResponseController(w)
	ctl.SetReadDeadline(s.bodyDeadline(reserve))
	body, err := readAll(w, r, limit)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, err
		}
		return nil, &partita.Error{Code: partita.CodeInvalidInput, Message: partita.MsgInvalidInput, Err: err}
	}
	// The body is in; the rest of the request has no read deadline (a
	// lapsed one would cancel the request's context).
	ctl.SetReadDeadline(time.Time{})
	rc.bodyPending = false
	rc.bytesIn = int64(len(body))
	return body, nil
}

// readAll reads at most limit bytes of the request body, into a buffer
// sized from Content-Length when the client sent one.
func readAll(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, limit)
	if n := r.ContentLength; n > 0 && n <= limit {
		buf := make([]byte, n, n+1)
		if _, err := io.ReadFull(body, buf); err != nil {
			return nil, err
		}
		// Anything beyond Content-Length is an error the reader reports.
		if m, err := body.Read(buf[n : n+1]); m > 0 || (err != nil && err != io.EOF) {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		return buf, nil
	}
	return io.ReadAll(body)
}
