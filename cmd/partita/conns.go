package main

import (
	"math"
)

// storeFiles is how many of the process's open files are kept out of
// --max-connections: Pebble keeps up to 1,000 sstable and blob files open
// (its file cache, Options.MaxOpenFiles; fewer under a small limit, see
// storeOpenFiles), and the write-ahead log, the manifest, directories,
// the admin and pprof listeners and a PostgreSQL pool need some more. A
// server whose connections took every file could not create the next
// sstable or log: Pebble retried its flush thousands of times a second,
// writes stalled once the memtables were full, and a log it could not
// create is a fatal storage error.
const storeFiles = 2048

// adminConnections bounds the admin and pprof listeners' connections.
const adminConnections = 64

// fitConnections returns the connections the server may hold at once:
// want (--max-connections), lowered when the process's open-file limit
// (nofile) leaves less than that beside storeFiles (or beside half the
// limit, when the limit is small); want 0 or less asks for as many as the
// limit allows. fitted reports whether a positive want was lowered.
func fitConnections(want int, nofile uint64) (n int, fitted bool) {
	if nofile == 0 || nofile > math.MaxInt32 {
		if want <= 0 {
			return math.MaxInt32, false
		}
		return want, false
	}
	room := int(nofile) - storeFiles
	if half := int(nofile) / 2; room < half {
		room = half
	}
	if want <= 0 {
		return room, false
	}
	if want > room {
		return room, true
	}
	return want, false
}

// storeOpenFiles returns how many sstable and blob files Pebble may keep
// open under the open-file limit nofile: what the connections
// (fitConnections) leave, less 64 files for the log, the manifest and the
// listeners, when that is below Pebble's default of 1,000 (at least 16);
// else 0, for the default.
func storeOpenFiles(nofile uint64) int {
	if nofile == 0 {
		return 0
	}
	conns, _ := fitConnections(0, nofile)
	if n := int(nofile) - conns - 64; n < 1000 {
		return max(n, 16)
	}
	return 0
}
