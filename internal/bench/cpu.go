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
	// tasks is the server's run time per thread in ns
	// (/proc/PID/task/TID/schedstat), nil when unreadable.
	tasks map[string]int64
}

// procJiffies returns utime+stime of pid (0 on any error).
func procJiffies(pid string) int64 {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	return parseStatJiffies(string(b))
}

// parseStatJiffies returns utime+stime of a /proc/PID/stat line: the
// CPU time of every thread of the process, dead ones included, in
// USER_HZ ticks (0 when the line does not parse).
func parseStatJiffies(s string) int64 {
	// The command name (field 2) may hold spaces; fields after ')' are fixed.
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
		s.tasks = taskRunNs(serverPID)
	}
	return s
}

// maxTasks bounds the threads read per snapshot; a server with more is
// measured in ticks only.
const maxTasks = 4096

// taskRunNs returns the run time in ns of each thread of pid, from
// /proc/PID/task/TID/schedstat (nil when unreadable or too many threads).
func taskRunNs(pid int) map[string]int64 {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 || len(ents) > maxTasks {
		return nil
	}
	m := make(map[string]int64, len(ents))
	for _, e := range ents {
		b, err := os.ReadFile(dir + "/" + e.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited meanwhile
		}
		ns, ok := parseSchedstat(string(b))
		if !ok {
			return nil
		}
		m[e.Name()] = ns
	}
	return m
}

// parseSchedstat returns the first field of a schedstat line: the time
// the thread spent on a CPU, in ns.
func parseSchedstat(s string) (int64, bool) {
	f := strings.Fields(s)
	if len(f) < 1 {
		return 0, false
	}
	v, err := strconv.ParseInt(f[0], 10, 64)
	return v, err == nil && v >= 0
}

// serverCPU returns the CPU time the server used between a and b, and
// how it was measured: "schedstat" (ns, summed over threads) when every
// thread of a is still there in b, so that no run time was lost with an
// exited thread; "stat" (10 ms ticks, the whole process) otherwise; ""
// without a reading.
func serverCPU(a, b cpuSnap) (time.Duration, string) {
	if !a.hasProc || !b.hasProc || b.server == 0 {
		return 0, ""
	}
	if a.tasks != nil && b.tasks != nil {
		var sum int64
		ok := true
		for tid, ns1 := range b.tasks {
			sum += ns1 - a.tasks[tid] // a thread born in between counts whole
		}
		for tid := range a.tasks {
			if _, still := b.tasks[tid]; !still {
				ok = false
				break
			}
		}
		if ok && sum >= 0 {
			return time.Duration(sum), "schedstat"
		}
	}
	return time.Duration(b.server-a.server) * (time.Second / userHZ), "stat"
}

// perUnit is cpu in µs per n units (0 when n is 0).
func perUnit(cpu time.Duration, n int64) float64 {
	if n <= 0 {
		return 0
	}
	return float64(cpu) / float64(time.Microsecond) / float64(n)
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
