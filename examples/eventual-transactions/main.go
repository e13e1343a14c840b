// Eventually consistent transactions: archiving an employee moves it from
// the Current table to the Archive table, which no transaction can span.
// The guide puts the request on a queue; a worker copies the entity, then
// deletes the original, then deletes the message, and every step is safe to
// repeat, so a worker that dies half way is simply run again. partita has no
// queue service, so the queue here is a partition of a third table, read
// oldest first.
package main

import (
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/partita/partita/examples/internal/ex"
)

func main() {
	env := ex.Start("eventual-transactions")
	current := env.NewTable("current")
	archive := env.NewTable("archive")
	queue := env.NewTable("archivequeue")

	for _, id := range []string{"000123", "000456", "000789"} {
		ex.Add(current, map[string]any{"PartitionKey": "Sales", "RowKey": id, "Name": "employee " + id})
	}
	// The client asks for two employees to be archived.
	for i, id := range []string{"000456", "000789"} {
		ex.Add(queue, map[string]any{"PartitionKey": "messages", "RowKey": fmt.Sprintf("%05d", i), "Department": "Sales", "EmployeeId": id})
	}

	// The first worker crashes after copying the first employee.
	work(current, archive, queue, true)
	rows, _ := ex.Query(archive, nil)
	ex.SameKeys(rows, "000456")
	rows, _ = ex.Query(current, nil)
	ex.SameKeys(rows, "000123", "000456", "000789") // in both tables for now

	// A second worker handles every message again, from the start.
	work(current, archive, queue, false)
	rows, _ = ex.Query(archive, nil)
	ex.SameKeys(rows, "000456", "000789")
	rows, _ = ex.Query(current, nil)
	ex.SameKeys(rows, "000123")
	rows, _ = ex.Query(queue, ex.Filter("PartitionKey eq 'messages'"))
	ex.Equal(len(rows), 0, "messages left on the queue")

	fmt.Println("a crashed worker left a copy in both tables; the rerun converged")
	env.Finish()
}

// work handles the queued messages in order. Each step is idempotent:
// upsert the copy, delete the original (already gone is fine), delete the
// message.
func work(current, archive, queue *aztables.Client, crash bool) {
	msgs, _ := ex.Query(queue, ex.Filter("PartitionKey eq 'messages'"))
	for _, m := range msgs {
		pk, rk := m.Str("Department"), m.Str("EmployeeId")
		got, err := current.GetEntity(ex.Ctx, pk, rk, nil)
		if err == nil {
			_, err = archive.UpsertEntity(ex.Ctx, got.Value, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace})
			ex.Must(err, "copy to archive")
		} else if !ex.IsCode(err, "ResourceNotFound") { // a rerun: already moved
			ex.Must(err, "read current")
		}
		if crash {
			return
		}
		if _, err := current.DeleteEntity(ex.Ctx, pk, rk, nil); err != nil && !ex.IsCode(err, "ResourceNotFound") {
			ex.Must(err, "delete from current")
		}
		_, err = queue.DeleteEntity(ex.Ctx, "messages", m.Str("RowKey"), nil)
		ex.Must(err, "delete message")
	}
}
