package e2e

// TLS helpers for the end-to-end tests: a throwaway CA and server
// certificate made at test time, a partita started over HTTPS, and a tiny
// HTTP CONNECT proxy that sends every https://<anything>:443 tunnel to that
// partita listener. With HTTPS_PROXY pointing at the proxy and the CA trusted
// (SSL_CERT_FILE for Go, NODE_EXTRA_CA_CERTS for node), clients that hard-code
// https://<account>.table.core.windows.net/ talk to partita instead. The
// proxy never dials anything but the partita listener, which must be a
// loopback address.

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TLSFiles are the PEM files written by GenerateTLSFiles.
type TLSFiles struct {
	Dir  string
	CA   string // ca.pem: the CA certificate clients must trust
	Cert string // cert.pem: the server certificate (leaf, then CA)
	Key  string // key.pem: the server private key (PKCS#8)

	caCert *x509.Certificate
	leaf   tls.Certificate
}

// serverCertDNSNames are the names the server certificate is valid for (plus
// IPs 127.0.0.1 and ::1).
var serverCertDNSNames = []string{
	"*.table.core.windows.net",
	"*.table.cosmos.azure.com",
	"localhost",
}

// GenerateTLSFiles makes a throwaway CA and a server certificate signed by it,
// valid for serverCertDNSNames, 127.0.0.1 and ::1, and writes cert.pem,
// key.pem and ca.pem to a temporary directory.
func GenerateTLSFiles(t testing.TB) TLSFiles {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          tlsRandSerial(t),
		Subject:               pkix.Name{CommonName: "partita e2e throwaway CA", Organization: []string{"partita e2e"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(48 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: tlsRandSerial(t),
		Subject:      pkix.Name{CommonName: "partita e2e server", Organization: []string{"partita e2e"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(47 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     serverCertDNSNames,
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}

	f := TLSFiles{
		Dir:    dir,
		CA:     filepath.Join(dir, "ca.pem"),
		Cert:   filepath.Join(dir, "cert.pem"),
		Key:    filepath.Join(dir, "key.pem"),
		caCert: caCert,
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	certPEM := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), caPEM...)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	for name, b := range map[string][]byte{f.CA: caPEM, f.Cert: certPEM, f.Key: keyPEM} {
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f.leaf, err = tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func tlsRandSerial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatal(err)
	}
	return n.Add(n, big.NewInt(1))
}

// CertPool is a pool holding only the throwaway CA.
func (f TLSFiles) CertPool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(f.caCert)
	return p
}

// StartTLSServer generates certificates and starts partita over HTTPS with a
// fresh data directory. Extra flags are appended. s.URL is https://127.0.0.1:PORT.
func StartTLSServer(t testing.TB, flags ...string) (*Server, TLSFiles) {
	t.Helper()
	f := GenerateTLSFiles(t)
	s := StartServer(t, "", append([]string{"--cert", f.Cert, "--key", f.Key}, flags...)...)
	u, err := url.Parse(s.URL)
	if err != nil || u.Scheme != "https" {
		t.Fatalf("partita started with --cert but serves %q", s.URL)
	}
	return s, f
}

// ConnectProxy is an HTTP proxy that answers only CONNECT requests for port
// 443, whatever the host, by tunnelling to one fixed loopback address.
type ConnectProxy struct {
	URL     string // http://127.0.0.1:PORT, for HTTPS_PROXY
	target  string
	ln      net.Listener
	srv     *http.Server
	tunnels atomic.Int64
	refused atomic.Int64

	// Trace mode (see StartTracingConnectProxy).
	trace   io.Writer
	traceMu sync.Mutex
	mitm    *tls.Config
	fwd     *http.Transport

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// StartConnectProxy starts a CONNECT proxy on 127.0.0.1:0 that sends every
// tunnel to target (host:port of the partita TLS listener, or an https:// URL).
// It refuses target addresses that are not loopback IPs. The proxy is closed
// at the end of the test.
func StartConnectProxy(t testing.TB, target string) *ConnectProxy {
	t.Helper()
	p := &ConnectProxy{target: loopbackTarget(t, target), conns: map[net.Conn]struct{}{}}
	p.start(t)
	return p
}

// StartTracingConnectProxy is StartConnectProxy for debugging: instead of
// passing TLS bytes through, it terminates TLS with the test server
// certificate, writes every request and response (headers and bodies) to w,
// and forwards the requests to partita over a new TLS connection. Use it to
// see the exact HTTP exchanges an SDK makes.
func StartTracingConnectProxy(t testing.TB, target string, f TLSFiles, w io.Writer) *ConnectProxy {
	t.Helper()
	p := &ConnectProxy{target: loopbackTarget(t, target), conns: map[net.Conn]struct{}{}, trace: w}
	p.mitm = &tls.Config{Certificates: []tls.Certificate{f.leaf}, NextProtos: []string{"http/1.1"}}
	dialTarget := p.target
	p.fwd = &http.Transport{
		// Every request goes to partita whatever its URL says.
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", dialTarget)
		},
		TLSClientConfig:   &tls.Config{RootCAs: f.CertPool(), ServerName: "localhost"},
		ForceAttemptHTTP2: false,
		Proxy:             nil,
	}
	p.start(t)
	return p
}

func loopbackTarget(t testing.TB, target string) string {
	t.Helper()
	if u, err := url.Parse(target); err == nil && u.Host != "" {
		target = u.Host
	}
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		t.Fatalf("proxy target %q: %v", target, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Fatalf("proxy target %q is not a loopback IP address; refusing", target)
	}
	return target
}

func (p *ConnectProxy) start(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.ln = ln
	p.URL = "http://" + ln.Addr().String()
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go p.srv.Serve(ln)
	t.Cleanup(p.Close)
}

// Close stops the proxy and cuts every open tunnel.
func (p *ConnectProxy) Close() {
	p.srv.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	if p.fwd != nil {
		p.fwd.CloseIdleConnections()
	}
}

// Tunnels is the number of CONNECT tunnels opened so far.
func (p *ConnectProxy) Tunnels() int64 { return p.tunnels.Load() }

// Refused is the number of requests refused so far.
func (p *ConnectProxy) Refused() int64 { return p.refused.Load() }

func (p *ConnectProxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *ConnectProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		p.refused.Add(1)
		http.Error(w, "partita e2e proxy: only CONNECT is supported", http.StatusMethodNotAllowed)
		return
	}
	_, port, err := net.SplitHostPort(r.Host)
	if err != nil || port != "443" {
		p.refused.Add(1)
		http.Error(w, "partita e2e proxy: only CONNECT to port 443 is supported", http.StatusForbidden)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "partita e2e proxy: cannot hijack", http.StatusInternalServerError)
		return
	}
	var up net.Conn
	if p.trace == nil {
		up, err = net.DialTimeout("tcp", p.target, 10*time.Second)
		if err != nil {
			http.Error(w, "partita e2e proxy: dial partita: "+err.Error(), http.StatusBadGateway)
			return
		}
	}
	down, brw, err := hj.Hijack()
	if err != nil {
		if up != nil {
			up.Close()
		}
		return
	}
	p.tunnels.Add(1)
	p.track(down, true)
	defer func() { p.track(down, false); down.Close() }()
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		if up != nil {
			up.Close()
		}
		return
	}
	// Bytes the client sent after the CONNECT request (e.g. the start of
	// the TLS handshake) may already sit in the server's buffer.
	var client net.Conn = down
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		client = &prefixConn{Conn: down, prefix: append([]byte(nil), b...)}
	}
	if p.trace != nil {
		p.serveTraced(client, r.Host)
		return
	}
	p.track(up, true)
	defer func() { p.track(up, false); up.Close() }()
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, client); closeWrite(up); done <- struct{}{} }()
	go func() { io.Copy(client, up); closeWrite(down); done <- struct{}{} }()
	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}

// prefixConn replays prefix before reading from the connection.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(b []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(b, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

func (c *prefixConn) CloseWrite() error { closeWrite(c.Conn); return nil }

// serveTraced terminates TLS on client, and forwards and logs each request.
func (p *ConnectProxy) serveTraced(client net.Conn, authority string) {
	tc := tls.Server(client, p.mitm)
	defer tc.Close()
	if err := tc.Handshake(); err != nil {
		p.tracef("### CONNECT %s: TLS handshake: %v\n", authority, err)
		return
	}
	br := bufio.NewReader(tc)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		dump, _ := httputil.DumpRequest(req, true)
		req.URL.Scheme = "https"
		req.URL.Host = req.Host
		req.RequestURI = ""
		resp, err := p.fwd.RoundTrip(req)
		if err != nil {
			p.tracef("### >>> %s\n%s\n### <<< error: %v\n\n", authority, dump, err)
			return
		}
		rdump, _ := httputil.DumpResponse(resp, true)
		p.tracef("### >>> %s\n%s\n### <<<\n%s\n\n", authority, dump, rdump)
		err = resp.Write(tc)
		resp.Body.Close()
		if err != nil || req.Close || resp.Close {
			return
		}
	}
}

func (p *ConnectProxy) tracef(format string, args ...any) {
	p.traceMu.Lock()
	defer p.traceMu.Unlock()
	fmt.Fprintf(p.trace, format, args...)
}

// TestTLSProxy checks the helpers themselves: a Go client that believes it
// talks to https://devstoreaccount1.table.core.windows.net/ reaches partita
// through the proxy, TLS verification passes with only the throwaway CA,
// and the proxy refuses plain (non-CONNECT) requests and other ports.
func TestTLSProxy(t *testing.T) {
	s, f := StartTLSServer(t)
	p := StartConnectProxy(t, s.URL)
	proxyURL, _ := url.Parse(p.URL)
	client := &http.Client{Transport: &http.Transport{
		Proxy:           http.ProxyURL(proxyURL),
		TLSClientConfig: &tls.Config{RootCAs: f.CertPool()},
	}}
	defer client.CloseIdleConnections()
	for _, u := range []string{
		"https://devstoreaccount1.table.core.windows.net/Tables",
		"https://devstoreaccount1.table.cosmos.azure.com/Tables",
	} {
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("GET %s through proxy: %v", u, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		// Unsigned: partita must answer, with an authentication error.
		if resp.Header.Get("x-ms-request-id") == "" {
			t.Errorf("GET %s: response without x-ms-request-id; not partita? status %s", u, resp.Status)
		}
		t.Logf("GET %s (unsigned) -> %s %s", u, resp.Status, resp.Header.Get("x-ms-error-code"))
	}
	// Path-style straight to partita also verifies against the CA (IP SAN).
	direct := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.CertPool()}}}
	defer direct.CloseIdleConnections()
	resp, err := direct.Get(s.Endpoint() + "/Tables")
	if err != nil {
		t.Fatalf("direct GET: %v", err)
	}
	resp.Body.Close()

	// Plain HTTP through the proxy (absolute-form GET) is refused.
	plain := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}
	defer plain.CloseIdleConnections()
	resp, err = plain.Get("http://devstoreaccount1.table.core.windows.net/Tables")
	if err != nil {
		t.Fatalf("plain GET through proxy: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("plain GET through proxy: got %s, want 405", resp.Status)
	}
	// CONNECT to a port other than 443 is refused.
	c, err := net.Dial("tcp", proxyURL.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT example.com:80 HTTP/1.1\r\nHost: example.com:80\r\n\r\n")
	cr, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	if cr.StatusCode != http.StatusForbidden {
		t.Errorf("CONNECT example.com:80: got %s, want 403", cr.Status)
	}
	if p.Tunnels() != 2 || p.Refused() != 2 {
		t.Errorf("tunnels=%d refused=%d, want 2 and 2", p.Tunnels(), p.Refused())
	}
}

// TestTLSServesHTTP1Only: like Azure Storage, partita speaks HTTP/1.1 over
// TLS and never agrees to HTTP/2, whose per-connection flow-control window
// would let a client park request bodies the server's memory budget does
// not count. A client offering h2 first gets http/1.1 from ALPN, and Go's
// HTTP client, which prefers HTTP/2 when offered, talks HTTP/1.1.
func TestTLSServesHTTP1Only(t *testing.T) {
	s, f := StartTLSServer(t)
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: f.CertPool(), NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatalf("TLS handshake offering h2: %v", err)
	}
	got := conn.ConnectionState().NegotiatedProtocol
	conn.Close()
	if got != "http/1.1" {
		t.Errorf("ALPN offering h2 and http/1.1 negotiated %q, want http/1.1", got)
	}

	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: f.CertPool()},
		ForceAttemptHTTP2: true,
	}}
	defer client.CloseIdleConnections()
	resp, err := client.Get(s.Endpoint() + "/Tables")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 1 || resp.Header.Get("x-ms-request-id") == "" {
		t.Errorf("GET over TLS with a client preferring HTTP/2: %s, %s, x-ms-request-id %q; want HTTP/1.1 from partita", resp.Proto, resp.Status, resp.Header.Get("x-ms-request-id"))
	}
}

// TestTLSHandshakeFloodLogsLittle: net/http logs one line for each failed
// TLS handshake, before anything is authenticated. 500 connections that
// speak plain HTTP to the TLS port (or any garbage) made 500 log lines;
// a client repeating that could fill the disk the log shares with the
// data. Now a burst passes, then about one line a second, and the server
// goes on serving.
func TestTLSHandshakeFloodLogsLittle(t *testing.T) {
	s, f := StartTLSServer(t)
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	before := s.logLines.Load()
	start := time.Now()
	for i := 0; i < 500; i++ {
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		io.Copy(io.Discard, c) // the server's 400, then its close
		c.Close()
	}
	// The server logs a failed handshake as it closes the connection;
	// let the last lines come through the pipe.
	time.Sleep(300 * time.Millisecond)
	logged := s.logLines.Load() - before
	if limit := int64(10 + time.Since(start).Seconds() + 5); logged > limit {
		t.Fatalf("500 failed handshakes in %v made %d log lines; want at most %d (a burst of 10, then one a second)", time.Since(start).Round(time.Millisecond), logged, limit)
	}
	if logged == 0 {
		t.Fatalf("500 failed handshakes made no log line at all; the first ones should be logged")
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.CertPool()}}}
	defer client.CloseIdleConnections()
	resp, err := client.Get(s.Endpoint() + "/Tables")
	if err != nil {
		t.Fatalf("after the flood: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Header.Get("x-ms-request-id") == "" {
		t.Fatalf("after the flood: %s without x-ms-request-id; want partita's answer", resp.Status)
	}
}

// TestCleartextHTTP2Refused: a client speaking HTTP/2 without TLS from
// the first byte (h2c with prior knowledge) gets 505 HTTP Version Not
// Supported and a closed connection: net/http hands its preface on as a
// request, which was answered 403 as if it were an unsigned one.
func TestCleartextHTTP2Refused(t *testing.T) {
	s := StartServer(t, "")
	c, err := net.Dial("tcp", serverHost(s))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusHTTPVersionNotSupported || !resp.Close {
		t.Errorf("h2c preface: %s (close %v), want 505 and the connection closed", resp.Status, resp.Close)
	}
}
