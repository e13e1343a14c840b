package bench

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// TestParseStatJiffies reads utime+stime from a /proc/PID/stat line whose
// command name holds spaces and a ')' (fields are counted after the last
// ')').
func TestParseStatJiffies(t *testing.T) {
	line := "4242 (par ti) ta) S 1 4242 4242 0 -1 4194560 1500 0 0 0 731 269 0 0 20 0 9 0 12345 1234567 890 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	if got := parseStatJiffies(line); got != 1000 {
		t.Errorf("parseStatJiffies = %d, want 731+269 = 1000", got)
	}
	for _, bad := range []string{"", "4242 (x", "4242 (x) S 1 2"} {
		if got := parseStatJiffies(bad); got != 0 {
			t.Errorf("parseStatJiffies(%q) = %d, want 0", bad, got)
		}
	}
}

func TestParseSchedstat(t *testing.T) {
	if ns, ok := parseSchedstat("123456789 4567 89\n"); !ok || ns != 123456789 {
		t.Errorf("parseSchedstat = %d, %v; want 123456789, true", ns, ok)
	}
	for _, bad := range []string{"", "x 1 2", "-5 1 2"} {
		if _, ok := parseSchedstat(bad); ok {
			t.Errorf("parseSchedstat(%q) ok, want not", bad)
		}
	}
}

// TestServerCPU: the per-thread ns sum when every thread of the first
// reading survives (a new thread counts whole), the process's ticks when
// one exited, and µs per unit.
func TestServerCPU(t *testing.T) {
	a := cpuSnap{hasProc: true, server: 100, tasks: map[string]int64{"1": 5_000_000, "2": 1_000_000}}
	b := cpuSnap{hasProc: true, server: 103, tasks: map[string]int64{"1": 25_000_000, "2": 3_000_000, "3": 500_000}}
	d, src := serverCPU(a, b)
	if want := 22_500_000 * time.Nanosecond; d != want || src != "schedstat" {
		t.Errorf("serverCPU = %v %q, want %v schedstat", d, src, want)
	}
	delete(b.tasks, "2") // thread 2 exited: its run time is gone from the sum
	d, src = serverCPU(a, b)
	if want := 30 * time.Millisecond; d != want || src != "stat" {
		t.Errorf("thread exited: serverCPU = %v %q, want %v stat", d, src, want)
	}
	if d, src := serverCPU(cpuSnap{hasProc: true}, cpuSnap{hasProc: true}); d != 0 || src != "" {
		t.Errorf("no server: serverCPU = %v %q, want 0 \"\"", d, src)
	}
	if got := perUnit(30*time.Millisecond, 400); got != 75 {
		t.Errorf("perUnit(30ms, 400) = %v µs, want 75", got)
	}
	if got := perUnit(time.Second, 0); got != 0 {
		t.Errorf("perUnit(1s, 0) = %v, want 0", got)
	}
}

// TestTakeCPUSelf measures this test process as the "server" while it
// burns CPU: the per-thread reading is there and grows.
func TestTakeCPUSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("no /proc")
	}
	pid := os.Getpid()
	a := takeCPU(pid)
	if a.tasks == nil {
		t.Fatal("no per-thread reading of this process")
	}
	var d time.Duration
	var src string
	x := 1.0
	for i := 0; d < 20*time.Millisecond && i < 1000; i++ {
		for j := 0; j < 1_000_000; j++ {
			x = x*1.0000001 + 1e-9
		}
		d, src = serverCPU(a, takeCPU(pid))
	}
	if d < 20*time.Millisecond || src == "" {
		t.Fatalf("after burning CPU: serverCPU = %v %q (x=%v)", d, src, x)
	}
}

// TestWriteTextCPUColumns: the text report has the server CPU columns.
func TestWriteTextCPUColumns(t *testing.T) {
	rep := &Report{Results: []Result{
		{Workload: "get", Ops: 1000, ServerCPUUsPerOp: 71.5},
		{Workload: "batch", Ops: 10, ServerCPUUsPerOp: 2500, ServerCPUUsPerEntity: 25},
	}}
	var b bytes.Buffer
	WriteText(&b, rep)
	out := b.String()
	if !strings.Contains(out, "srv µs/op") || !strings.Contains(out, "srv µs/entity") {
		t.Fatalf("no server CPU columns in:\n%s", out)
	}
	for _, want := range []string{"71.5", "2500", "25.0"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}
