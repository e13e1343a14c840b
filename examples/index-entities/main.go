// Index entities: to find employees by last name, each department partition
// holds one index entity per last name listing the employee ids. Adding an
// employee inserts it and updates the index in one transaction, with the
// index's ETag so that a concurrent change makes the transaction fail and
// the writer start over.
package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/partita/partita/examples/internal/ex"
)

func main() {
	env := ex.Start("index-entities")
	t := env.NewTable("indexentities")

	addEmployee(t, "Sales", "000152", "Jones")
	addEmployee(t, "Sales", "000160", "Smith")
	addEmployee(t, "Sales", "000171", "Jones")

	// A stale ETag: someone else changed the index in between.
	stale := indexETag(t, "Sales", "Jones")
	addEmployee(t, "Sales", "000180", "Jones")
	_, err := t.SubmitTransaction(ex.Ctx, []aztables.TransactionAction{
		{ActionType: aztables.TransactionTypeAdd, Entity: ex.JSON(map[string]any{"PartitionKey": "Sales", "RowKey": "000190", "LastName": "Jones"})},
		{ActionType: aztables.TransactionTypeUpdateReplace, IfMatch: &stale, Entity: ex.JSON(map[string]any{"PartitionKey": "Sales", "RowKey": "Jones", "EmployeeIDs": "000152 000171 000190"})},
	}, nil)
	ex.Check(ex.IsCode(err, "UpdateConditionNotSatisfied"), "stale index ETag: got %v", err)
	_, err = t.GetEntity(ex.Ctx, "Sales", "000190", nil)
	ex.Check(ex.IsCode(err, "ResourceNotFound"), "the failed transaction inserted 000190: %v", err)

	// Look up the Joneses: the index entity, then each employee.
	idx, err := t.GetEntity(ex.Ctx, "Sales", "Jones", nil)
	ex.Must(err, "get index")
	var ie ex.Entity
	ex.Must(json.Unmarshal(idx.Value, &ie), "decode index")
	ids := strings.Fields(ie.Str("EmployeeIDs"))
	ex.Check(slices.Equal(ids, []string{"000152", "000171", "000180"}), "index: %v", ids)
	var or []string
	for _, id := range ids {
		or = append(or, fmt.Sprintf("RowKey eq '%s'", id))
	}
	rows, _ := ex.Query(t, ex.Filter("PartitionKey eq 'Sales' and ("+strings.Join(or, " or ")+")"))
	ex.SameKeys(rows, ids...)
	ex.Classes(env.Classes(), "point")

	fmt.Println("the index entity and the employees stay consistent through ETag-guarded transactions")
	env.Finish()
}

func indexETag(t *aztables.Client, dept, last string) azcore.ETag {
	got, err := t.GetEntity(ex.Ctx, dept, last, nil)
	ex.Must(err, "get index "+last)
	return got.ETag
}

// addEmployee inserts the employee and adds it to its last name's index
// entity in one transaction, retrying when the index changed meanwhile.
func addEmployee(t *aztables.Client, dept, id, last string) {
	for {
		index := map[string]any{"PartitionKey": dept, "RowKey": last, "EmployeeIDs": id}
		update := aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd}
		got, err := t.GetEntity(ex.Ctx, dept, last, nil)
		if err == nil {
			var cur ex.Entity
			ex.Must(json.Unmarshal(got.Value, &cur), "decode index")
			index["EmployeeIDs"] = cur.Str("EmployeeIDs") + " " + id
			update = aztables.TransactionAction{ActionType: aztables.TransactionTypeUpdateReplace, IfMatch: &got.ETag}
		} else if !ex.IsCode(err, "ResourceNotFound") {
			ex.Must(err, "get index")
		}
		update.Entity = ex.JSON(index)
		_, err = t.SubmitTransaction(ex.Ctx, []aztables.TransactionAction{
			{ActionType: aztables.TransactionTypeAdd, Entity: ex.JSON(map[string]any{"PartitionKey": dept, "RowKey": id, "LastName": last})},
			update,
		}, nil)
		if ex.IsCode(err, "UpdateConditionNotSatisfied") || ex.IsCode(err, "EntityAlreadyExists") {
			continue // the index changed under us: start over
		}
		ex.Must(err, "add employee "+id)
		return
	}
}
