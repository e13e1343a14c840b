package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// TestHTTPErrorLogIsThrottled: a flood of net/http error lines (as a
// client failing TLS handshakes on purpose makes) reaches the log as a
// burst, then at most one a second, and the first line after a drop
// counts the lines dropped.
func TestHTTPErrorLogIsThrottled(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1_800_000_000, 0)
	tl := &throttledLog{log: slog.New(slog.NewJSONHandler(&buf, nil)), lim: rate.NewLimiter(httpLogRate, httpLogBurst), now: func() time.Time { return now }}
	line := []byte("http: TLS handshake error from 192.0.2.1:50000: client sent an HTTP request to an HTTPS server\n")
	for i := 0; i < 1000; i++ {
		if n, err := tl.Write(line); n != len(line) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if got := strings.Count(buf.String(), "\n"); got != httpLogBurst {
		t.Fatalf("1,000 lines at once: %d logged, want the burst of %d", got, httpLogBurst)
	}
	now = now.Add(time.Second)
	for i := 0; i < 1000; i++ {
		tl.Write(line)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != httpLogBurst+1 {
		t.Fatalf("a second later, 1,000 more: %d lines in all, want %d", len(lines), httpLogBurst+1)
	}
	var last struct {
		Level   string `json:"level"`
		Msg     string `json:"msg"`
		Dropped int    `json:"dropped_before"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	if last.Level != "WARN" || last.Msg != strings.TrimSpace(string(line)) || last.Dropped != 990 {
		t.Fatalf("the line after the drop: %+v; want WARN, the message without its newline, dropped_before 990", last)
	}
}
