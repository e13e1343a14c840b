package httpapi

import (
	"net/http"
	"time"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/metrics"
)

// countingWriter is the response writer of a request when metrics are
// on: it keeps the status and counts the body bytes written. It lives in
// the reqCtx, so it costs no allocation of its own.
type countingWriter struct {
	http.ResponseWriter
	status int
	n      int64
}

func (c *countingWriter) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
	c.ResponseWriter.WriteHeader(status)
}

func (c *countingWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	n, err := c.ResponseWriter.Write(b)
	c.n += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// Flush passes flushes on.
func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// observe records a finished request: the one observation point of the
// request metrics.
func (s *Server) observe(w http.ResponseWriter, rc *reqCtx) {
	code := ""
	if v := w.Header()["X-Ms-Error-Code"]; len(v) > 0 {
		code = v[0]
	}
	status := rc.cw.status
	if status == 0 {
		status = http.StatusOK
	}
	if code == string(partita.CodeServerBusy) && !rc.busyNoted {
		s.metrics.Busy("store", 0)
	}
	s.metrics.Observe(&metrics.Request{Account: rc.account, Operation: rc.op, Status: status, Code: code,
		Duration: time.Since(rc.start), BytesIn: rc.bytesIn, BytesOut: rc.cw.n})
}

// entitySize is an entity's size for the advisor, computed only when its
// body is large enough for the entity to be near the size limit.
func (s *Server) entitySize(bodyLen int, e *partita.Entity) int {
	if s.advisor == nil || !s.advisor.MaySizeMatter(bodyLen) {
		return 0
	}
	return e.Size()
}

// ErrorCodes lists every error code a response may carry, for the
// metrics' code label.
func ErrorCodes() []string {
	codes := make([]string, 0, len(statusByCode))
	for c := range statusByCode {
		codes = append(codes, string(c))
	}
	return codes
}

// inUse is the units taken, for the in-flight gauge.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
