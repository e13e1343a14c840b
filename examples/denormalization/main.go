// Denormalization: the department entity carries a copy of its manager's
// details, so everything a department page shows is one point query instead
// of two. Changing the manager rewrites both in one transaction (same
// partition).
package main

import (
	"encoding/json"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/partita/partita/examples/internal/ex"
)

func main() {
	env := ex.Start("denormalization")
	t := env.NewTable("denormalization")

	ex.Add(t, map[string]any{"PartitionKey": "Sales", "RowKey": "emp_000123", "Name": "Kim Jones", "Email": "jonesk@contoso.com", "Phone": "555-0100"})
	ex.Add(t, map[string]any{"PartitionKey": "Sales", "RowKey": "emp_000152", "Name": "Jim Jones", "Email": "jonesj@contoso.com", "Phone": "555-0152"})
	ex.Add(t, map[string]any{"PartitionKey": "Sales", "RowKey": "department", "EmployeeCount": 2,
		"ManagerId": "000123", "ManagerName": "Kim Jones", "ManagerEmail": "jonesk@contoso.com"})

	rows, _ := ex.Query(t, ex.Filter("PartitionKey eq 'Sales' and RowKey eq 'department'"))
	ex.Check(len(rows) == 1 && rows[0].Str("ManagerEmail") == "jonesk@contoso.com", "department: %v", rows)
	ex.Classes(env.Classes(), "point")

	// A new manager: update the department's copy in the same transaction
	// as the employee change, so readers never see them disagree.
	dept, err := t.GetEntity(ex.Ctx, "Sales", "department", nil)
	ex.Must(err, "get department")
	etag := dept.ETag
	_, err = t.SubmitTransaction(ex.Ctx, []aztables.TransactionAction{
		{ActionType: aztables.TransactionTypeUpdateMerge, IfMatch: &etag, Entity: ex.JSON(map[string]any{"PartitionKey": "Sales", "RowKey": "department",
			"ManagerId": "000152", "ManagerName": "Jim Jones", "ManagerEmail": "jonesj@contoso.com"})},
		{ActionType: aztables.TransactionTypeUpdateMerge, IfMatch: ptr(azcore.ETagAny), Entity: ex.JSON(map[string]any{"PartitionKey": "Sales", "RowKey": "emp_000152", "IsManager": true})},
	}, nil)
	ex.Must(err, "change manager")

	got, err := t.GetEntity(ex.Ctx, "Sales", "department", nil)
	ex.Must(err, "get department")
	var d ex.Entity
	ex.Must(json.Unmarshal(got.Value, &d), "decode")
	ex.Equal(d.Str("ManagerName"), "Jim Jones", "manager after the change")
	ex.Equal(d.Num("EmployeeCount"), 2, "merge kept EmployeeCount")

	fmt.Println("one point query returns the department with its manager's details")
	env.Finish()
}

func ptr[T any](v T) *T { return &v }
