package bench

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// CPU accounting from /proc (Linux; elsewhere every reading is zero): how
// many cores the bench client, the server (--server-pid) and the whole
// machine kept busy during a workload. On a small machine where client and
// server share the cores, this tells whether a number is bound by the
// server, by the client, or by someone else's load.

// userHZ is the unit of /proc CPU times (USER_HZ, 100 on every Linux port
// that matters).
const userHZ = 100

// cpuSnap is one reading.
type cpuSnap struct {
	at      time.Time
	self    int64 // jiffies of this process
	server  int64 // jiffies of the server process
	busy    int64 // non-idle jiffies of the machine, all CPUs
	total   int64
	hasProc bool
}

// procJiffies returns utime+stime of pid (0 on any error).
func procJiffies(pid string) int64 {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; fields after ')' are fixed.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}

// machineJiffies returns the busy and total jiffies of all CPUs.
func machineJiffies() (busy, total int64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, false
	}
	for i, x := range f[1:] {
		if i >= 8 { // guest times are already in user/nice
			break
		}
		v, _ := strconv.ParseInt(x, 10, 64)
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total, true
}

func takeCPU(serverPID int) cpuSnap {
	s := cpuSnap{at: time.Now()}
	s.busy, s.total, s.hasProc = machineJiffies()
	if !s.hasProc {
		return s
	}
	s.self = procJiffies("self")
	if serverPID > 0 {
		s.server = procJiffies(strconv.Itoa(serverPID))
	}
	return s
}

// cores returns the average cores busy between a and b: this client, the
// server (0 without a pid) and the whole machine.
func cores(a, b cpuSnap) (client, server, machine float64) {
	secs := b.at.Sub(a.at).Seconds()
	if !a.hasProc || !b.hasProc || secs <= 0 {
		return 0, 0, 0
	}
	c := func(j int64) float64 { return float64(j) / userHZ / secs }
	return c(b.self - a.self), c(b.server - a.server), c(b.busy - a.busy)
}

// ProcessCPUSeconds is the CPU time pid has used so far, user and system
// (0 when /proc cannot tell).
func ProcessCPUSeconds(pid int) float64 {
	return float64(procJiffies(strconv.Itoa(pid))) / userHZ
}
