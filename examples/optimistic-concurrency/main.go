// Optimistic concurrency: every write returns a new ETag, and an update or
// delete that passes the ETag it read fails with 412 if anyone wrote the
// entity since. Two clients incrementing a counter with read-modify-write
// lose no increment when they retry on 412.
package main

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/partita/partita/examples/internal/ex"
)

func main() {
	env := ex.Start("optimistic-concurrency")
	t := env.NewTable("optimistic")

	ex.Add(t, map[string]any{"PartitionKey": "counters", "RowKey": "visits", "Count": 0})

	// A stale ETag is refused, and the entity is unchanged.
	first, err := t.GetEntity(ex.Ctx, "counters", "visits", nil)
	ex.Must(err, "get")
	_, err = t.UpdateEntity(ex.Ctx, ex.JSON(map[string]any{"PartitionKey": "counters", "RowKey": "visits", "Count": 1}),
		&aztables.UpdateEntityOptions{IfMatch: &first.ETag, UpdateMode: aztables.UpdateModeReplace})
	ex.Must(err, "update with the current ETag")
	_, err = t.UpdateEntity(ex.Ctx, ex.JSON(map[string]any{"PartitionKey": "counters", "RowKey": "visits", "Count": 100}),
		&aztables.UpdateEntityOptions{IfMatch: &first.ETag, UpdateMode: aztables.UpdateModeReplace})
	ex.Check(ex.IsCode(err, "UpdateConditionNotSatisfied") && ex.Status(err) == 412, "update with a stale ETag: got %v", err)
	_, err = t.DeleteEntity(ex.Ctx, "counters", "visits", &aztables.DeleteEntityOptions{IfMatch: &first.ETag})
	ex.Check(ex.IsCode(err, "UpdateConditionNotSatisfied"), "delete with a stale ETag: got %v", err)

	// Four writers, 25 increments each, retrying on conflict.
	const writers, each = 4, 25
	var wg sync.WaitGroup
	conflicts := make([]int, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				for {
					got, err := t.GetEntity(ex.Ctx, "counters", "visits", nil)
					ex.Must(err, "get")
					var e ex.Entity
					ex.Must(json.Unmarshal(got.Value, &e), "decode")
					_, err = t.UpdateEntity(ex.Ctx, ex.JSON(map[string]any{"PartitionKey": "counters", "RowKey": "visits", "Count": int(e.Num("Count")) + 1}),
						&aztables.UpdateEntityOptions{IfMatch: &got.ETag, UpdateMode: aztables.UpdateModeReplace})
					if ex.IsCode(err, "UpdateConditionNotSatisfied") {
						conflicts[w]++
						continue
					}
					ex.Must(err, "increment")
					break
				}
			}
		}()
	}
	wg.Wait()
	rows, _ := ex.Query(t, ex.Filter("PartitionKey eq 'counters' and RowKey eq 'visits'"))
	ex.Equal(int(rows[0].Num("Count")), 1+writers*each, "count")
	ex.Classes(env.Classes(), "point")

	n := 0
	for _, c := range conflicts {
		n += c
	}
	fmt.Printf("%d increments, none lost; %d conflicts retried\n", writers*each, n)
	env.Finish()
}
