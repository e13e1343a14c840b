// Log data anti-pattern: with log messages partitioned by source, finding
// the errors of a time span has to visit every partition: a table scan,
// which x-partita-query-class reports. The guide's answer is to keep logs in
// blobs named by time; in a table, the cheapest shape is a partition per
// time bucket, which turns the question into one range query per bucket,
// at the price of the hot partition of the prepend/append anti-pattern.
package main

import (
	"fmt"
	"time"

	"github.com/partita/partita/examples/internal/ex"
)

func main() {
	env := ex.Start("log-data")
	bySource := env.NewTable("logsbysource")
	byTime := env.NewTable("logsbytime")

	start := time.Date(2014, 7, 31, 15, 0, 0, 0, time.UTC)
	errors := 0
	for i := range 200 {
		at := start.Add(time.Duration(i) * 3 * time.Second) // 15:00 to 15:10
		level := []string{"info", "info", "warning", "error"}[i%4]
		id := fmt.Sprintf("%s_%05d", at.Format("150405"), i)
		src := fmt.Sprintf("server%d", i%5)
		ex.Add(bySource, map[string]any{"PartitionKey": src, "RowKey": id, "Level": level, "Msg": "m"})
		ex.Add(byTime, map[string]any{"PartitionKey": at.Format("2006-01-02T15:04"), "RowKey": src + "_" + id, "Level": level, "Msg": "m"})
		if level == "error" && at.Minute() >= 4 && at.Minute() < 6 {
			errors++
		}
	}

	rows, _ := ex.Query(bySource, ex.Filter("RowKey ge '150400' and RowKey lt '150600' and Level eq 'error'"))
	ex.Equal(len(rows), errors, "errors 15:04-15:06 by source")
	ex.Classes(env.Classes(), "table")

	got := 0
	for _, minute := range []string{"2014-07-31T15:04", "2014-07-31T15:05"} {
		rows, _ := ex.Query(byTime, ex.Filter("PartitionKey eq '"+minute+"' and Level eq 'error'"))
		got += len(rows)
	}
	ex.Equal(got, errors, "errors 15:04-15:06 by minute")
	ex.Classes(env.Classes(), "partition", "partition")

	fmt.Printf("%d errors: a table scan over sources, two partition queries over minutes\n", errors)
	env.Finish()
}
