package console

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestAssetsKeepTheCSP: the page holds nothing the Content-Security-Policy
// would block (inline scripts, inline styles, event-handler attributes,
// foreign URLs), and every file it loads is embedded.
func TestAssetsKeepTheCSP(t *testing.T) {
	page, err := fs.ReadFile(assets, "assets/index.html")
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	for _, m := range regexp.MustCompile(`(?s)<script[^>]*>.*?</script>`).FindAllString(html, -1) {
		if !regexp.MustCompile(`^<script [^>]*src="[^"]+"[^>]*></script>$`).MatchString(m) {
			t.Errorf("index.html has an inline script %q, which the CSP forbids", m)
		}
	}
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)\son[a-z]+\s*=`),                     // onclick=…
		regexp.MustCompile(`(?i)\sstyle\s*=`),                        // style="…"
		regexp.MustCompile(`(?i)<style`),                             // <style>
		regexp.MustCompile(`(?i)(?:src|href)\s*=\s*"(?:[a-z]+:)?//`), // another origin
	} {
		if m := bad.FindString(html); m != "" {
			t.Errorf("index.html has %q, which the CSP forbids", m)
		}
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"#:]+)"`).FindAllStringSubmatch(html, -1)
	if len(refs) < 2 {
		t.Fatalf("index.html loads %d files, want the script and the style sheet", len(refs))
	}
	for _, r := range refs {
		if _, err := fs.Stat(assets, "assets/"+r[1]); err != nil {
			t.Errorf("index.html loads %s, which is not embedded", r[1])
		}
	}
	// The modules import only embedded modules, by relative path.
	fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(p, ".js") {
			return err
		}
		b, _ := fs.ReadFile(assets, p)
		for _, m := range regexp.MustCompile(`(?m)^import .* from '([^']+)';`).FindAllStringSubmatch(string(b), -1) {
			if !strings.HasPrefix(m[1], "./") {
				t.Errorf("%s imports %s, not an embedded module", p, m[1])
			} else if _, err := fs.Stat(assets, "assets/"+strings.TrimPrefix(m[1], "./")); err != nil {
				t.Errorf("%s imports %s, which is not embedded", p, m[1])
			}
		}
		if strings.Contains(string(b), "eval(") || strings.Contains(string(b), "new Function") {
			t.Errorf("%s evaluates strings as code", p)
		}
		return nil
	})
}

func TestHandler(t *testing.T) {
	h := Handler()
	for _, tt := range []struct {
		method, path string
		status       int
		cache        string
	}{
		{"GET", "/_partita/console/", 200, "no-store"},
		{"GET", "/_partita/console/index.html", 200, "no-store"},
		{"GET", "/_partita/console/app.js", 200, "no-cache"},
		{"HEAD", "/_partita/console/style.css", 200, "no-cache"},
		{"GET", "/_partita/console", 302, ""},
		{"GET", "/_partita/console/missing.js", 404, ""},
		{"GET", "/_partita/console/assets/app.js", 404, ""},
		{"GET", "/_partita/console/console.go", 404, ""},
		{"DELETE", "/_partita/console/", 405, ""},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(tt.method, tt.path, nil))
		if w.Code != tt.status {
			t.Errorf("%s %s: %d, want %d", tt.method, tt.path, w.Code, tt.status)
		}
		if got := w.Header().Get("Cache-Control"); tt.cache != "" && got != tt.cache {
			t.Errorf("%s %s: Cache-Control %q, want %q", tt.method, tt.path, got, tt.cache)
		}
		if got := w.Header().Get("Content-Security-Policy"); got != csp {
			t.Errorf("%s %s: CSP %q", tt.method, tt.path, got)
		}
		if tt.method == "HEAD" && w.Body.Len() != 0 {
			t.Errorf("HEAD %s: a body of %d bytes", tt.path, w.Body.Len())
		}
		if w.Code == 405 && w.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s %s: Allow %q", tt.method, tt.path, w.Header().Get("Allow"))
		}
	}
}

// TestScriptsRevalidate: the scripts are served no-cache, so a browser
// asks again on every load; with their ETag it gets 304 and no body, and
// a changed file (another ETag) is sent whole.
func TestScriptsRevalidate(t *testing.T) {
	h := Handler()
	for _, name := range []string{"app.js", "api.js", "style.css"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", Prefix+name, nil))
		etag := w.Header().Get("ETag")
		if w.Code != 200 || w.Body.Len() == 0 || !strings.HasPrefix(etag, `"`) {
			t.Fatalf("GET %s: %d, %d bytes, ETag %q", name, w.Code, w.Body.Len(), etag)
		}
		r := httptest.NewRequest("GET", Prefix+name, nil)
		r.Header.Set("If-None-Match", etag)
		w = httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusNotModified || w.Body.Len() != 0 {
			t.Errorf("GET %s with its ETag: %d, %d bytes, want 304 and none", name, w.Code, w.Body.Len())
		}
		r.Header.Set("If-None-Match", `"stale"`)
		w = httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 || w.Body.Len() == 0 {
			t.Errorf("GET %s with another ETag: %d, %d bytes, want 200 and the file", name, w.Code, w.Body.Len())
		}
	}
}
