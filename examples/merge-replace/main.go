// Merge or replace: a merge updates the properties it sends and keeps the
// others; a replace leaves only what it sends. Inside a transaction the Go
// SDK's UpdateMerge and UpdateReplace send no If-Match unless IfMatch is
// set, which makes them upserts (Insert Or Merge / Insert Or Replace): they
// create a missing entity instead of failing. Set IfMatch to "*" to update
// only entities that exist.
package main

import (
	"encoding/json"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/partita/partita/examples/internal/ex"
)

func get(t *aztables.Client, pk, rk string) ex.Entity {
	got, err := t.GetEntity(ex.Ctx, pk, rk, nil)
	ex.Must(err, "get "+rk)
	var e ex.Entity
	ex.Must(json.Unmarshal(got.Value, &e), "decode")
	return e
}

func main() {
	env := ex.Start("merge-replace")
	t := env.NewTable("mergereplace")
	star := azcore.ETagAny

	ex.Add(t, map[string]any{"PartitionKey": "Sales", "RowKey": "000123", "FirstName": "Kim", "LastName": "Jones", "Phone": "555-0100"})

	_, err := t.UpdateEntity(ex.Ctx, ex.JSON(map[string]any{"PartitionKey": "Sales", "RowKey": "000123", "Phone": "555-0199"}),
		&aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeMerge, IfMatch: &star})
	ex.Must(err, "merge")
	e := get(t, "Sales", "000123")
	ex.Check(e.Str("Phone") == "555-0199" && e.Str("FirstName") == "Kim", "after merge: %v", e)

	_, err = t.UpdateEntity(ex.Ctx, ex.JSON(map[string]any{"PartitionKey": "Sales", "RowKey": "000123", "Phone": "555-0142"}),
		&aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeReplace, IfMatch: &star})
	ex.Must(err, "replace")
	e = get(t, "Sales", "000123")
	_, hasFirst := e["FirstName"]
	ex.Check(e.Str("Phone") == "555-0142" && !hasFirst, "after replace: %v", e)

	// The pitfall: a transaction "update" of a missing entity creates it.
	_, err = t.SubmitTransaction(ex.Ctx, []aztables.TransactionAction{{ActionType: aztables.TransactionTypeUpdateMerge,
		Entity: ex.JSON(map[string]any{"PartitionKey": "Sales", "RowKey": "000999", "Phone": "555-0999"})}}, nil)
	ex.Must(err, "transaction merge without IfMatch")
	ex.Equal(get(t, "Sales", "000999").Str("Phone"), "555-0999", "upserted entity")

	// The workaround: IfMatch "*" makes it an update that needs the entity.
	_, err = t.SubmitTransaction(ex.Ctx, []aztables.TransactionAction{{ActionType: aztables.TransactionTypeUpdateReplace, IfMatch: &star,
		Entity: ex.JSON(map[string]any{"PartitionKey": "Sales", "RowKey": "000998", "Phone": "555-0998"})}}, nil)
	ex.Check(ex.IsCode(err, "ResourceNotFound"), "transaction replace with IfMatch * of a missing entity: got %v", err)
	_, err = t.GetEntity(ex.Ctx, "Sales", "000998", nil)
	ex.Check(ex.IsCode(err, "ResourceNotFound"), "000998 exists: %v", err)

	rows, _ := ex.Query(t, ex.Filter("PartitionKey eq 'Sales'"))
	ex.SameKeys(rows, "000123", "000999")
	ex.Classes(env.Classes(), "partition")

	fmt.Println("merge kept the other properties, replace dropped them; IfMatch * stops a transaction update from inserting")
	env.Finish()
}
