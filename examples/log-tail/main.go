// Log tail: RowKeys made of inverted ticks sort newest first, so the n most
// recent entries of a partition are its first n entities: a partition query
// with $top that stops after one page.
package main

import (
	"fmt"
	"math"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/partita/partita/examples/internal/ex"
)

// invertedTicks is the guide's DateTime.MaxValue.Ticks - t.Ticks, written
// with 19 digits; any fixed-width decreasing number works the same.
func invertedTicks(t time.Time) string {
	return fmt.Sprintf("%019d", math.MaxInt64-t.UnixNano())
}

func main() {
	env := ex.Start("log-tail")
	t := env.NewTable("logtail")

	start := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	for i := range 50 {
		at := start.Add(time.Duration(i) * time.Minute)
		ex.Add(t, map[string]any{"PartitionKey": "empid_000123", "RowKey": invertedTicks(at),
			"Amount": float64(i) + 0.5, "SubmittedAt": at.Format(time.RFC3339)})
	}

	top := int32(10)
	p := t.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: ptr("PartitionKey eq 'empid_000123'"), Top: &top})
	page, err := p.NextPage(ex.Ctx)
	ex.Must(err, "first page")
	ex.Equal(len(page.Entities), 10, "entities on the first page")
	ex.Check(page.NextRowKey != nil, "a continuation after $top=10 of 50")
	rows, _ := ex.Query(t, &aztables.ListEntitiesOptions{Filter: ptr("PartitionKey eq 'empid_000123'"), Top: &top})
	ex.Equal(len(rows), 50, "entities over all pages")
	ex.Equal(rows[0].Str("SubmittedAt"), start.Add(49*time.Minute).Format(time.RFC3339), "newest first")
	ex.Equal(rows[49].Str("SubmittedAt"), start.Format(time.RFC3339), "oldest last")
	for _, c := range env.Classes() {
		ex.Equal(c, "partition", "query class")
	}

	fmt.Println("the ten newest entries are the first page of the partition")
	env.Finish()
}

func ptr(s string) *string { return &s }
