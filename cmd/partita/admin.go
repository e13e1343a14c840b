package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/partita/partita/internal/admin"
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
	ln, err := net.Listen("tcp", c.AdminAddr)
	if err != nil {
		return nil, fmt.Errorf("--admin-addr: %w", err)
	}
	if ap, ok := ln.Addr().(*net.TCPAddr); ok && !ap.IP.IsLoopback() {
		log.Warn("the admin listener is not on loopback: anyone who reaches it can read the health of the store and write backups wherever the server may write", "addr", ln.Addr().String())
	}
	mux := http.NewServeMux()
	obs.mount(mux)
	mux.Handle("/", admin.New(admin.Options{DB: db, Engine: engineName(c.Store), Store: store, BackupRoot: c.BackupRoot, StoreDirs: storeDirs(c), Logger: log}))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	fx.onFatal(func() { srv.Close() })
	go srv.Serve(limitConnections(ln, adminConnections))
	fmt.Fprintf(stdout, "partita: admin listening on http://%s\n", ln.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}, nil
}
