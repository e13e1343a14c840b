package main

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// TestServeGCFlags: the GC target defaults to 400 and the soft memory
// limit to 160 MiB (with cgo; none without); GOGC and GOMEMLIMIT, when set,
// give the defaults instead (-1, "leave Go's own", for values such as off
// or 1GiB); the flags win over everything.
func TestServeGCFlags(t *testing.T) {
	defLimit := int64(160)
	if !pebbleOffHeap {
		defLimit = 0
	}
	for _, tc := range []struct {
		gogc, gomemlimit string // "" = unset
		args             []string
		want, wantMB     int64
	}{
		{"", "", nil, 400, defLimit},
		{"50", "", nil, 50, defLimit},
		{"off", "", nil, -1, defLimit},
		{"", "268435456", nil, 400, 256},
		{"", "1GiB", nil, 400, -1},
		{"50", "1GiB", []string{"--gc-percent", "100", "--go-mem-limit-mb", "64"}, 100, 64},
	} {
		setenv(t, "GOGC", tc.gogc)
		setenv(t, "GOMEMLIMIT", tc.gomemlimit)
		c, err := parseConfig(tc.args, io.Discard, io.Discard)
		if err != nil {
			t.Fatalf("GOGC=%q GOMEMLIMIT=%q %v: %v", tc.gogc, tc.gomemlimit, tc.args, err)
		}
		if c.GCPercent != tc.want || c.GoMemLimitMB != tc.wantMB {
			t.Errorf("GOGC=%q GOMEMLIMIT=%q %v: gc-percent %d, go-mem-limit-mb %d; want %d, %d",
				tc.gogc, tc.gomemlimit, tc.args, c.GCPercent, c.GoMemLimitMB, tc.want, tc.wantMB)
		}
	}
}

// setenv sets name to v for the rest of the test, or unsets it when v is
// empty; t.Setenv restores the old value either way.
func setenv(t *testing.T, name, v string) {
	t.Helper()
	t.Setenv(name, v)
	if v == "" {
		if err := os.Unsetenv(name); err != nil {
			t.Fatal(err)
		}
	}
}

// TestServeCacheFlag: --cache-mb defaults to 64 MiB and takes a value.
func TestServeCacheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int64
	}{
		{nil, 64},
		{[]string{"--cache-mb", "512"}, 512},
	} {
		c, err := parseConfig(tc.args, io.Discard, io.Discard)
		if err != nil || c.CacheMB != tc.want {
			t.Errorf("%v: cache-mb %d, %v; want %d", tc.args, c.CacheMB, err, tc.want)
		}
	}
	if _, err := parseConfig([]string{"--cache-mb", "lots"}, io.Discard, io.Discard); err == nil {
		t.Error("--cache-mb lots: accepted")
	}
}

// TestServeStoreWaitFlag: --store-wait defaults to a minute, takes 0 (try
// once) and refuses a negative wait.
func TestServeStoreWaitFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, time.Minute},
		{[]string{"--store-wait", "0"}, 0},
		{[]string{"--store-wait", "5m"}, 5 * time.Minute},
	} {
		c, err := parseConfig(tc.args, io.Discard, io.Discard)
		if err != nil || c.StoreWait != tc.want {
			t.Errorf("%v: store-wait %v, %v; want %v", tc.args, c.StoreWait, err, tc.want)
		}
	}
	if _, err := parseConfig([]string{"--store-wait", "-1s"}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "--store-wait") {
		t.Errorf("--store-wait -1s: %v, want an error naming the flag", err)
	}
}

// TestServeWALDirNeedsPebble: --wal-dir with an engine that has no WAL of
// partita's is refused before anything is opened or listened on.
func TestServeWALDirNeedsPebble(t *testing.T) {
	err := run(t.Context(), []string{"serve", "--store", "mem", "--wal-dir", t.TempDir(), "--addr", "127.0.0.1:0"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--wal-dir") {
		t.Errorf("serve --store mem --wal-dir: %v, want an error naming --wal-dir", err)
	}
}

// TestServeFlagsInREADME: README.md's flag table and the flags table of
// `partita serve` name the same flags, each with the same environment
// variables, so that the two cannot drift apart.
func TestServeFlagsInREADME(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{} // flag name → its README row
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		first := strings.SplitN(line, "|", 3)[1]
		for _, f := range strings.Split(first, ",") {
			name := strings.Trim(strings.TrimSpace(f), "`")
			rows[strings.TrimPrefix(name, "--")] = line
		}
	}
	var c Config
	seen := map[string]bool{}
	for _, d := range serveFlags(&c) {
		seen[d.name] = true
		row, ok := rows[d.name]
		if !ok {
			t.Errorf("--%s is not in README.md's flag table", d.name)
			continue
		}
		env := strings.Split(strings.SplitN(row, "|", 4)[2], ",")
		for _, e := range strings.Split(d.env, ",") {
			if e = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(e), "else ")); e == "" {
				continue
			}
			found := false
			for _, r := range env {
				found = found || strings.Contains(r, "`"+e+"`")
			}
			if !found {
				t.Errorf("--%s: README.md's row does not name %s", d.name, e)
			}
		}
	}
	for name := range rows {
		if !seen[name] {
			t.Errorf("README.md's flag table lists --%s, which partita serve does not have", name)
		}
	}
}

func TestFitConnections(t *testing.T) {
	for _, c := range []struct {
		want   int
		nofile uint64
		n      int
		fitted bool
	}{
		{10000, 0, 10000, false},        // no limit known
		{10000, 1 << 20, 10000, false},  // room for all
		{10000, 20000, 10000, false},    // 17,952 of room
		{20000, 20000, 17952, true},     // the store keeps 2,048
		{10000, 4096, 2048, true},       // at 4,096 the store's part and half agree
		{10000, 1024, 512, true},        // a small limit is halved
		{100, 1024, 100, false},         // within it
		{0, 20000, 17952, false},        // 0: as many as the limit allows
		{0, 0, 1<<31 - 1, false},        // 0 and no limit
		{-1, 1 << 40, 1<<31 - 1, false}, // unlimited in practice
		{5000, 1 << 40, 5000, false},    // ditto, with a cap
	} {
		n, fitted := fitConnections(c.want, c.nofile)
		if n != c.n || fitted != c.fitted {
			t.Errorf("fitConnections(%d, %d) = %d, %v; want %d, %v", c.want, c.nofile, n, fitted, c.n, c.fitted)
		}
	}
}

func TestStoreOpenFilesFitSmallLimits(t *testing.T) {
	for _, c := range []struct {
		nofile uint64
		want   int
	}{
		{0, 0}, {1 << 20, 0}, {20000, 0}, {4096, 0}, {2128, 0}, // Pebble's 1,000 fit beside the connections
		{2126, 999}, {1024, 448}, {256, 64}, {100, 16},
	} {
		got := storeOpenFiles(c.nofile)
		if got != c.want {
			t.Errorf("storeOpenFiles(%d) = %d, want %d", c.nofile, got, c.want)
		}
		tables := got
		if tables == 0 {
			tables = 1000 // Pebble's default
		}
		if conns, _ := fitConnections(10000, c.nofile); c.nofile >= 256 && conns+tables+64 > int(c.nofile) {
			t.Errorf("under %d files: %d connections and %d table files do not fit", c.nofile, conns, tables)
		}
	}
}
