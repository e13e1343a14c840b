package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/partita/partita/internal/admin"
	"github.com/partita/partita/internal/httpapi"
	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/tablestore"
)

// engineName is the engine's name in messages: pebble, mem or postgres.
func engineName(store string) string {
	if strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://") {
		return "postgres"
	}
	return store
}

// storeDirs are the embedded store's directories, absolute.
func storeDirs(c Config) []string {
	if c.Store != "pebble" {
		return nil
	}
	var dirs []string
	for _, d := range []string{c.Data, c.WALDir} {
		if d == "" {
			continue
		}
		if abs, err := filepath.Abs(d); err == nil {
			dirs = append(dirs, abs)
		}
	}
	return dirs
}

// startAdmin serves the admin handler, and the metrics and the advisor of
// obs, on c.AdminAddr (nothing when it is empty) and prints "admin listening on URL". The returned function stops
// it.
func startAdmin(c Config, db kv.DB, store *tablestore.Store, obs observability, log *slog.Logger, stdout io.Writer, fx *fatalExit) (func(), error) {
	if c.AdminAddr == "" {
		return func() {}, nil
	}
	if c.BackupRoot != "" {
		// Otherwise every backup would be refused (403) with no word at start.
		if fi, err := os.Stat(c.BackupRoot); err != nil || !fi.IsDir() {
			if err == nil {
				err = errors.New("not a directory")
			}
			return nil, fmt.Errorf("--backup-root %s: %v", c.BackupRoot, err)
		}
	}
	ln, err := net.Listen("tcp", c.AdminAddr)
	if err != nil {
		return nil, fmt.Errorf("--admin-addr: %w", err)
	}
	if ap, ok := ln.Addr().(*net.TCPAddr); ok && !ap.IP.IsLoopback() {
		log.Warn("the admin listener is not on loopback: anyone who reaches it can read the store's health, the metrics and the advisor's partition keys of every account, and write backups wherever the server may write", "addr", ln.Addr().String())
	}
	mux := http.NewServeMux()
	obs.mount(mux)
	mux.Handle("/", admin.New(admin.Options{DB: db, Engine: engineName(c.Store), Store: store, BackupRoot: c.BackupRoot, StoreDirs: storeDirs(c), Logger: log}))
	srv := &http.Server{
		Handler:           operatorOnly(mux, ln),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          httpErrorLog(log),
		ConnState:         connState, // for the listener's reclaim
	}
	fx.onFatal(func() { srv.Close() })
	// At the cap a new connection takes the place of one idle between
	// requests (capListener): with a plain limit, any local process that
	// kept 64 keep-alive connections idle (one request each a minute)
	// left /healthz, /readyz and backups unanswered.
	go srv.Serve(newCapListener(ln, adminConnections))
	fmt.Fprintf(stdout, "partita: admin listening on http://%s\n", ln.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}, nil
}

// operatorOnly guards the unauthenticated listeners (admin, pprof) against
// the one client that can reach loopback without being on the machine: a
// web page the operator has open. Its browser may send a cross-site POST
// with a text/plain body without asking first (a backup into any
// directory the server may write, over and over), and DNS rebinding
// makes a page of an attacker's name read loopback answers as its own
// (the advisor's partition keys, metrics, pprof's command line). So
//
//   - a request that is not a GET or HEAD and carries Origin, or
//     Sec-Fetch-Site other than "none", is refused: browsers mark every
//     such request with them; partita backup, curl and probes send
//     neither;
//   - on a loopback listener, or over a loopback connection to a listener
//     on every address, a request must name the host by an IP address or
//     as localhost: a rebound name is refused. A listener an operator put
//     on another address (and was warned about) is reached from elsewhere
//     by whatever names they give it.
//
// Refusals are 403 with the reason.
func operatorOnly(next http.Handler, ln net.Listener) http.Handler {
	loopback := false
	if ap, ok := ln.Addr().(*net.TCPAddr); ok {
		loopback = ap.IP.IsLoopback()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 && r.ProtoMajor < 2 {
			// A body these listeners read (a backup's few hundred bytes)
			// must come at once; one they do not read must not be
			// waited for. Without this, net/http waited for ever for an
			// announced body (these servers have no read timeout, which
			// would also cut a long pprof profile short), and 64 such
			// connections, all busy, locked out /healthz and backups.
			if r.Method == http.MethodPost || r.Method == http.MethodPut {
				http.NewResponseController(w).SetReadDeadline(time.Now().Add(operatorBodyWait))
			} else {
				httpapi.LeaveBodyUnread(w)
			}
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if r.Header.Get("Origin") != "" || r.Header.Get("Sec-Fetch-Site") != "" && r.Header.Get("Sec-Fetch-Site") != "none" {
				http.Error(w, "refused: a request from a web page; this listener is unauthenticated and for the machine's operators (use partita backup)", http.StatusForbidden)
				return
			}
		}
		if (loopback || loopbackConn(r)) && !loopbackHost(r.Host) {
			http.Error(w, fmt.Sprintf("refused: host %q is not an IP address or localhost; this listener is on loopback and answers only requests addressed to it", r.Host), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// operatorBodyWait bounds the read of a request body on the admin and
// pprof listeners: a backup's is a line of JSON.
var operatorBodyWait = 10 * time.Second

// noCrossSiteReads refuses, on the pprof listener, GETs a web page makes
// too: operatorOnly lets cross-site GETs through, which cannot read the
// answer, but on pprof a GET is work: an <img> pointing at
// /debug/pprof/profile?seconds=86400 or /trace starts a day-long profile
// that holds the process's one CPU profiler. go tool pprof and curl send
// neither Origin nor Sec-Fetch-Site; a browser sends "none" for an
// address typed in, and "same-origin" for pprof's own index links.
func noCrossSiteReads(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site := r.Header.Get("Sec-Fetch-Site")
		if site != "" && site != "none" && site != "same-origin" || site == "" && r.Header.Get("Origin") != "" {
			http.Error(w, "refused: a request from another site's web page; pprof is for the machine's operators", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackConn reports whether r came over a loopback connection: on a
// listener on every address (0.0.0.0, [::]) a web page's DNS-rebound name
// reaches it through 127.0.0.1 as well.
func loopbackConn(r *http.Request) bool {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	return ok && a.IP.IsLoopback()
}

// loopbackHost reports whether a Host header names the host by an IP
// address or as localhost, with or without a port, or is empty.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if net.ParseIP(host) != nil {
		return true
	}
	// No Host at all (HTTP/1.0 probes) is no browser's.
	return host == "" || strings.EqualFold(strings.TrimSuffix(host, "."), "localhost")
}
