// Prepend/append anti-pattern: keying log events by the current hour sends
// every insert to one partition, a hotspot. The guide's fix puts the
// department and employee in the PartitionKey and the time in the RowKey, so
// inserts spread over many partitions and one employee's events for an hour
// are still a range query.
package main

import (
	"fmt"
	"time"

	"github.com/partita/partita/examples/internal/ex"
)

func main() {
	env := ex.Start("prepend-append")
	t := env.NewTable("prependappend")

	start := time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC)
	partitions := map[string]bool{}
	for i := range 120 {
		at := start.Add(time.Duration(i) * 97 * time.Second)
		emp := fmt.Sprintf("%06d", 100+i%6)
		pk := "Sales_" + emp
		partitions[pk] = true
		ex.Add(t, map[string]any{"PartitionKey": pk, "RowKey": at.Format("2006010215") + fmt.Sprintf("_%04d", i),
			"Event": "door", "At": at.Format(time.RFC3339)})
	}
	ex.Equal(len(partitions), 6, "partitions written")

	// One employee's events in the hour 15:00: a range query.
	rows, _ := ex.Query(t, ex.Filter("PartitionKey eq 'Sales_000101' and RowKey ge '2026030215' and RowKey lt '2026030216'"))
	for _, r := range rows {
		at, err := time.Parse(time.RFC3339, r.Str("At"))
		ex.Must(err, "At")
		ex.Equal(at.Hour(), 15, "hour of "+r.Str("RowKey"))
	}
	ex.Check(len(rows) > 0, "no events for 000101 at 15:00")
	ex.Classes(env.Classes(), "range")

	fmt.Printf("inserts spread over %d partitions; an employee's hour is a range query (%d events)\n", len(partitions), len(rows))
	env.Finish()
}
