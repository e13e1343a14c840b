// Intra-partition secondary index: each employee is stored twice in its
// department's partition, once under "empid_<id>" and once under
// "email_<address>", written together in one entity group transaction so
// the copies never disagree. Lookups by either key are point queries, and
// ranges of either are range queries.
package main

import (
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/partita/partita/examples/internal/ex"
)

type employee struct {
	ID, First, Last, Email string
}

func main() {
	env := ex.Start("intra-partition-index")
	t := env.NewTable("intraindex")

	staff := []employee{
		{"000100", "Ann", "Adams", "adamsa@contoso.com"},
		{"000152", "Jim", "Jones", "jonesj@contoso.com"},
		{"000199", "Amy", "Abbott", "abbotta@contoso.com"},
		{"000223", "Kim", "Jones", "jonesk@contoso.com"},
	}
	for _, e := range staff {
		props := map[string]any{"PartitionKey": "Sales", "EmployeeId": e.ID,
			"FirstName": e.First, "LastName": e.Last, "Email": e.Email}
		var batch []aztables.TransactionAction
		for _, rk := range []string{"empid_" + e.ID, "email_" + e.Email} {
			props["RowKey"] = rk
			batch = append(batch, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: ex.JSON(props)})
		}
		_, err := t.SubmitTransaction(ex.Ctx, batch, nil)
		ex.Must(err, "insert both copies of "+e.ID)
	}

	// Point queries by employee id and by email address.
	rows, _ := ex.Query(t, ex.Filter("PartitionKey eq 'Sales' and RowKey eq 'empid_000223'"))
	ex.Check(len(rows) == 1 && rows[0].Str("Email") == "jonesk@contoso.com", "by id: %v", rows)
	rows, _ = ex.Query(t, ex.Filter("PartitionKey eq 'Sales' and RowKey eq 'email_jonesj@contoso.com'"))
	ex.Check(len(rows) == 1 && rows[0].Str("EmployeeId") == "000152", "by email: %v", rows)
	ex.Classes(env.Classes(), "point", "point")

	// Range queries: ids 000100..000199, and emails starting with "a".
	rows, _ = ex.Query(t, ex.Filter("PartitionKey eq 'Sales' and RowKey ge 'empid_000100' and RowKey le 'empid_000199'"))
	ex.SameKeys(rows, "empid_000100", "empid_000152", "empid_000199")
	rows, _ = ex.Query(t, ex.Filter("PartitionKey eq 'Sales' and RowKey ge 'email_a' and RowKey lt 'email_b'"))
	ex.SameKeys(rows, "email_abbotta@contoso.com", "email_adamsa@contoso.com")
	ex.Classes(env.Classes(), "range", "range")

	fmt.Println("found employees by id and by email, singly and by range")
	env.Finish()
}
