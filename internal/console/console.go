// Package console serves partita's web console: a single-page app whose
// static assets are embedded in the binary. It adds no way in: the pages
// are public, hold no data, and the app signs its own requests to the
// Table API (SharedKey computed in the browser, or a SAS appended to each
// URL). The server never sees the account key.
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// Prefix is the URL path the console is served under, on any Host (so
// both path-style and host-style endpoints reach it).
const Prefix = "/_partita/console/"

//go:embed assets
var assets embed.FS

// csp allows only the console's own files and requests to its own origin:
// no inline scripts or styles, no frames, no plug-ins, no foreign hosts.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

// types maps the extensions of the embedded files to their media types, so
// that serving does not depend on the host's mime tables.
var types = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// Handler serves the console's files under Prefix. Only GET and HEAD are
// allowed; anything not embedded is 404.
func Handler() http.Handler {
	root, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	// Each file's ETag is a hash of its bytes, so that the scripts'
	// revalidation (no-cache) costs a 304 rather than the file.
	etags := map[string]string{}
	fs.WalkDir(root, ".", func(name string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := fs.ReadFile(root, name); err == nil {
				sum := sha256.Sum256(b)
				etags[name] = `"` + hex.EncodeToString(sum[:12]) + `"`
			}
		}
		return nil
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name, ok := strings.CutPrefix(r.URL.Path, Prefix)
		if !ok {
			http.Redirect(w, r, Prefix, http.StatusFound)
			return
		}
		if name == "" {
			name = "index.html"
		}
		ct, known := types[path.Ext(name)]
		if !known || !fs.ValidPath(name) {
			http.NotFound(w, r)
			return
		}
		b, err := fs.ReadFile(root, name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		h.Set("Content-Type", ct)
		// The page must always be fetched afresh, so that a new binary's
		// scripts are never paired with an old page; the scripts are
		// revalidated too, since they carry no version in their names.
		h.Set("Cache-Control", "no-cache")
		if name == "index.html" {
			h.Set("Cache-Control", "no-store")
		}
		h.Set("ETag", etags[name])
		// ServeContent answers If-None-Match with 304, HEAD and ranges.
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
	})
}
