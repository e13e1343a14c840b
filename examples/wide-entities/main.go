// Wide entities: an entity has at most 252 properties of its own, so a
// year of daily counters (365) is split over two entities of one
// partition, written together in one transaction and read back with two
// point queries (or one range query).
package main

import (
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/partita/partita/examples/internal/ex"
)

func main() {
	env := ex.Start("wide-entities")
	t := env.NewTable("wideentities")

	// One entity cannot hold them all.
	all := map[string]any{"PartitionKey": "000123", "RowKey": "2025"}
	for d := 1; d <= 365; d++ {
		all[fmt.Sprintf("D%03d", d)] = d % 17
	}
	_, err := t.AddEntity(ex.Ctx, ex.JSON(all), nil)
	ex.Check(ex.IsCode(err, "TooManyProperties"), "365 properties: got %v, want TooManyProperties", err)

	parts := []map[string]any{{"PartitionKey": "000123", "RowKey": "2025_01"}, {"PartitionKey": "000123", "RowKey": "2025_02"}}
	for d := 1; d <= 365; d++ {
		parts[(d-1)/200][fmt.Sprintf("D%03d", d)] = d % 17
	}
	_, err = t.SubmitTransaction(ex.Ctx, []aztables.TransactionAction{
		{ActionType: aztables.TransactionTypeAdd, Entity: ex.JSON(parts[0])},
		{ActionType: aztables.TransactionTypeAdd, Entity: ex.JSON(parts[1])},
	}, nil)
	ex.Must(err, "insert both halves")

	days := 0
	for _, rk := range []string{"2025_01", "2025_02"} {
		rows, _ := ex.Query(t, ex.Filter("PartitionKey eq '000123' and RowKey eq '"+rk+"'"))
		ex.Equal(len(rows), 1, rk)
		for d := 1; d <= 365; d++ {
			if v, ok := rows[0][fmt.Sprintf("D%03d", d)]; ok {
				ex.Equal(v.(float64), float64(d%17), fmt.Sprintf("day %d", d))
				days++
			}
		}
	}
	ex.Equal(days, 365, "days over both entities")
	rows, _ := ex.Query(t, ex.Filter("PartitionKey eq '000123' and RowKey ge '2025_' and RowKey lt '2025`'"))
	ex.SameKeys(rows, "2025_01", "2025_02")
	ex.Classes(env.Classes(), "point", "point", "range")

	fmt.Println("365 counters in two entities of one partition")
	env.Finish()
}
