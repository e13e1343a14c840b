// Heterogeneous entity types: departments and their employees share a
// partition, told apart by a RowKey prefix (and an EntityType property), so
// one partition query returns a department with its staff, a prefix range
// returns only one type, and a transaction can change both.
package main

import (
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/partita/partita/examples/internal/ex"
)

func main() {
	env := ex.Start("heterogeneous")
	t := env.NewTable("heterogeneous")

	_, err := t.SubmitTransaction(ex.Ctx, []aztables.TransactionAction{
		{ActionType: aztables.TransactionTypeAdd, Entity: ex.JSON(map[string]any{"PartitionKey": "Sales", "RowKey": "department",
			"EntityType": "Department", "Name": "Sales", "EmployeeCount": 2})},
		{ActionType: aztables.TransactionTypeAdd, Entity: ex.JSON(map[string]any{"PartitionKey": "Sales", "RowKey": "employee_000123",
			"EntityType": "Employee", "FirstName": "Kim", "LastName": "Jones", "Age": 34})},
		{ActionType: aztables.TransactionTypeAdd, Entity: ex.JSON(map[string]any{"PartitionKey": "Sales", "RowKey": "employee_000152",
			"EntityType": "Employee", "FirstName": "Jim", "LastName": "Jones", "Age": 41})},
	}, nil)
	ex.Must(err, "insert department and staff")

	rows, _ := ex.Query(t, ex.Filter("PartitionKey eq 'Sales'"))
	ex.SameKeys(rows, "department", "employee_000123", "employee_000152")
	types := map[string]int{}
	for _, r := range rows {
		switch r.Str("EntityType") { // each type decoded its own way
		case "Department":
			ex.Equal(r.Num("EmployeeCount"), 2, "EmployeeCount")
		case "Employee":
			ex.Check(r.Str("LastName") == "Jones", "employee %v", r)
		default:
			ex.Fail("unknown type in %v", r)
		}
		types[r.Str("EntityType")]++
	}
	ex.Check(types["Department"] == 1 && types["Employee"] == 2, "types: %v", types)

	rows, _ = ex.Query(t, ex.Filter("PartitionKey eq 'Sales' and RowKey ge 'employee_' and RowKey lt 'employee`'"))
	ex.SameKeys(rows, "employee_000123", "employee_000152")
	rows, _ = ex.Query(t, ex.Filter("PartitionKey eq 'Sales' and EntityType eq 'Employee' and Age gt 40"))
	ex.SameKeys(rows, "employee_000152")
	ex.Classes(env.Classes(), "partition", "range", "partition")

	fmt.Println("one partition holds two entity types; a RowKey prefix selects one")
	env.Finish()
}
