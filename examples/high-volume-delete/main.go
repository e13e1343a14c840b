// High-volume delete: sign-in attempts go to one table per day, so dropping
// a day is one Delete Table however many entities it holds, instead of
// thousands of deletes. Inserts spread over partitions (a hash bucket) and
// go in batches of 100.
package main

import (
	"fmt"
	"hash/fnv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/partita/partita/examples/internal/ex"
)

const attempts = 3000

func main() {
	env := ex.Start("high-volume-delete")
	day := env.NewTable("signins")
	keep := env.NewTable("signinsnext")
	ex.Add(keep, map[string]any{"PartitionKey": "b00", "RowKey": "x"})

	batches := map[string][]aztables.TransactionAction{}
	flush := func(pk string) {
		_, err := day.SubmitTransaction(ex.Ctx, batches[pk], nil)
		ex.Must(err, "insert batch")
		delete(batches, pk)
	}
	for i := range attempts {
		user := fmt.Sprintf("user%05d", i%700)
		h := fnv.New32a()
		h.Write([]byte(user))
		pk := fmt.Sprintf("b%02d", h.Sum32()%8)
		e := map[string]any{"PartitionKey": pk, "RowKey": fmt.Sprintf("%s_%06d", user, i), "Succeeded": i%7 != 0}
		batches[pk] = append(batches[pk], aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: ex.JSON(e)})
		if len(batches[pk]) == 100 {
			flush(pk)
		}
	}
	for pk := range batches {
		flush(pk)
	}
	rows, _ := ex.Query(day, ex.Filter("Succeeded eq false"))
	ex.Equal(len(rows), (attempts+6)/7, "failed sign-ins")
	ex.Classes(env.Classes(), "table")

	// The day is over: drop its table in one request.
	start := time.Now()
	_, err := day.Delete(ex.Ctx, nil)
	ex.Must(err, "delete the day's table")
	took := time.Since(start)
	_, err = day.GetEntity(ex.Ctx, "b00", "user00000_000000", nil)
	ex.Check(ex.IsCode(err, "TableNotFound") || ex.IsCode(err, "ResourceNotFound"), "the table is gone: %v", err)
	_, err = keep.GetEntity(ex.Ctx, "b00", "x", nil)
	ex.Must(err, "the other day's table is untouched")

	fmt.Printf("dropped %d entities with one Delete Table in %v\n", attempts, took.Round(time.Millisecond))
	env.Finish()
}
