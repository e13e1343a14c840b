// Package httpapi is partita's HTTP edge: it authenticates requests, routes
// them to the partita.Store, encodes responses, and is the only place where
// errors become statuses, codes and bodies (errors.go).
package httpapi

import (
	"crypto/rand"
	"encoding/hex"
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
	"github.com/partita/partita/internal/auth"
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
}

// Server serves the Table REST API.
type Server struct {
	store     partita.Store
	keys      auth.Keyring
	log       *slog.Logger
	now       func() time.Time
	slots     chan struct{}
	queueWait time.Duration
	date      atomic.Pointer[cachedDate]
	corsCache corsCache // the accounts' CORS rules, for corsHeaders
}

// New returns a Server.
func New(o Options) *Server {
	s := &Server{store: o.Store, keys: o.Accounts, log: orDefault(o.Logger), now: o.Now, queueWait: o.QueueWait}
	if s.now == nil {
		s.now = time.Now
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 256
	}
	if s.queueWait <= 0 {
		s.queueWait = time.Second
	}
	s.slots = make(chan struct{}, o.MaxInFlight)
	return s
}

// reqCtx is what the handlers of one request share.
type reqCtx struct {
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

// validVersion accepts any YYYY-MM-DD x-ms-version.
func validVersion(v string) bool {
	if len(v) != 10 || v[4] != '-' || v[7] != '-' {
		return false
	}
	for i, c := range v {
		if i != 4 && i != 7 && (c < '0' || c > '9') {
			return false
		}
	}
	return true
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
)

var (
	valNosniff = []string{"nosniff"}
	valServer  = []string{"partita/" + partita.Version}
	valNoCache = []string{"no-cache"}
	valZero    = []string{"0"}
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

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc := &reqCtx{id: newRequestID(), op: "Unknown"}
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
	if !s.acquire() {
		w.Header().Set("Retry-After", "1")
		s.writeError(w, rc, partita.NewError(partita.CodeServerBusy, partita.MsgServerBusy))
		return
	}
	defer func() { <-s.slots }()
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

// acquire takes a request slot, waiting at most queueWait.
func (s *Server) acquire() bool {
	select {
	case s.slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(s.queueWait)
	defer t.Stop()
	select {
	case s.slots <- struct{}{}:
		return true
	case <-t.C:
		return false
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, rc *reqCtx, version string) error {
	rawPath, rawQuery, _ := strings.Cut(r.RequestURI, "?")
	if !strings.HasPrefix(r.RequestURI, "/") { // absolute form, through a proxy
		if u, err := url.Parse(r.RequestURI); err == nil && u.IsAbs() {
			rawPath, rawQuery = u.EscapedPath(), u.RawQuery
		}
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return partita.NewError(partita.CodeInvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid.")
	}
	rc.query = q
	if q.Get("comp") != "" || q.Get("restype") != "" {
		rc.xml = true
	}
	meta, err := negotiate(r.Header.Get("Accept"), q)
	if err != nil {
		return err
	}
	rc.meta = meta
	if !validVersion(version) {
		return partita.NewError(partita.CodeInvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format.")
	}
	account, signing, resource, prefix, ok := splitAccount(r.Host, rawPath)
	if !ok {
		return partita.NewError(partita.CodeInvalidInput, partita.MsgInvalidInput)
	}
	rc.account = account
	rc.resource = resource
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	rc.base = scheme + "://" + r.Host + prefix

	rc.secondary = strings.HasSuffix(signing, "-secondary")
	if r.Method == http.MethodOptions {
		return s.handlePreflight(w, r, rc)
	}
	if err := s.authenticate(r, rc, rawPath, q, signing); err != nil {
		return err
	}
	s.corsHeaders(w, r, rc)
	return s.route(w, r, rc)
}

// negotiate picks the JSON metadata level from $format or, without it,
// the Accept header.
func negotiate(accept string, q url.Values) (wire.Metadata, error) {
	f := q.Get("$format")
	if f == "" {
		f = accept
		if strings.HasPrefix(f, "application/atom+xml") {
			return 0, partita.NewError(partita.CodeAtomFormatNotSupported, "Atom format is not supported.")
		}
	}
	switch {
	case strings.Contains(f, "odata=nometadata"):
		return wire.NoMetadata, nil
	case strings.Contains(f, "odata=fullmetadata"):
		return wire.FullMetadata, nil
	}
	return wire.MinimalMetadata, nil
}

// readBody reads at most limit bytes of the request body, into a buffer
// sized from Content-Length when the client sent one.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
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
