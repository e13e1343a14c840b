// Data series: one entity per employee and day holds 24 hourly counters,
// updated with merges that touch one property each, so the whole chart is a
// single point read instead of 24 entities.
package main

import (
	"encoding/json"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/partita/partita/examples/internal/ex"
)

func main() {
	env := ex.Start("data-series")
	t := env.NewTable("dataseries")

	day := map[string]any{"PartitionKey": "000123", "RowKey": "2026-01-15"}
	for h := range 24 {
		day[fmt.Sprintf("H%02d", h)] = 0
	}
	ex.Add(t, day)

	// The messages of the day arrive; each hour's count is merged in.
	for h := range 24 {
		star := azcore.ETagAny
		_, err := t.UpdateEntity(ex.Ctx, ex.JSON(map[string]any{"PartitionKey": "000123", "RowKey": "2026-01-15",
			fmt.Sprintf("H%02d", h): h * 10}), &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeMerge, IfMatch: &star})
		ex.Must(err, "merge hour")
	}

	got, err := t.GetEntity(ex.Ctx, "000123", "2026-01-15", nil)
	ex.Must(err, "get the day")
	var e ex.Entity
	ex.Must(json.Unmarshal(got.Value, &e), "decode")
	for h := range 24 {
		ex.Equal(e.Num(fmt.Sprintf("H%02d", h)), float64(h*10), fmt.Sprintf("H%02d", h))
	}
	rows, _ := ex.Query(t, ex.Filter("PartitionKey eq '000123' and RowKey eq '2026-01-15'"))
	ex.Equal(len(rows), 1, "entities for the day")
	ex.Classes(env.Classes(), "point")

	fmt.Println("24 hourly counters in one entity, read with one point query")
	env.Finish()
}
