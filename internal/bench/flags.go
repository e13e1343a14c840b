package bench

import "flag"

// AddFlags defines on fs the flags that set c (whose values are their
// defaults) and --workload, whose value ParseWorkloads reads. `partita
// bench` and internal/cmd/benchcompare share them.
func (c *Config) AddFlags(fs *flag.FlagSet) (workloads *string) {
	fs.StringVar(&c.Endpoint, "endpoint", c.Endpoint, "Table endpoint, path style (http://host:port/account) or host style")
	fs.StringVar(&c.Account, "account", c.Account, "account name to sign with")
	fs.StringVar(&c.Key, "key", c.Key, "account key (base64)")
	workloads = fs.String("workload", "all", "comma list of workloads (see above), or all")
	fs.IntVar(&c.Concurrency, "concurrency", c.Concurrency, "concurrent requests (goroutines and keep-alive connections)")
	fs.IntVar(&c.EntitySize, "entity-size", c.EntitySize, "bytes of random payload per entity (the Payload property)")
	fs.IntVar(&c.Partitions, "partitions", c.Partitions, "partitions the keys spread over")
	fs.IntVar(&c.Count, "count", c.Count, "entities per insert-like workload (insert, batch, delete)")
	fs.IntVar(&c.BatchCount, "batch-count", 0, "entities of the measured batch workload when it should differ from --count (0: --count); it then runs after the other workloads, in a table of its own, and the bench's table still gets --count entities by $batch, unmeasured")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "time cap per workload (measured part)")
	fs.DurationVar(&c.CountCap, "count-cap", 0, "time cap of insert, batch and delete when it should differ from --duration (0: --duration)")
	fs.DurationVar(&c.Warmup, "warmup", c.Warmup, "unmeasured lead-in of each duration-bound workload")
	fs.IntVar(&c.BatchSize, "batch-size", c.BatchSize, "operations per $batch changeset (1..100)")
	fs.IntVar(&c.RangeSize, "range-size", c.RangeSize, "rows one range query asks for")
	fs.IntVar(&c.MaxOps, "max-ops", c.MaxOps, "operation cap of each duration-bound workload")
	fs.StringVar(&c.Table, "table", "", "table to use, created if missing and kept (default: a fresh unique table, deleted at the end)")
	fs.IntVar(&c.Preloaded, "preloaded", 0, "entities 0..N-1 of the bench's key layout already exist in --table (same --partitions); insert continues after them")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "timeout of one HTTP request (0: none)")
	fs.StringVar(&c.Progress, "progress", c.Progress, "progress on stderr: auto (a bar on a terminal, plain lines otherwise), bar, plain, none")
	fs.Uint64Var(&c.Seed, "seed", 0, "seed of the random key choice and payloads (0: from the clock)")
	fs.IntVar(&c.ServerPID, "server-pid", 0, "report the CPU use of this server process (/proc/PID/stat)")
	return workloads
}
