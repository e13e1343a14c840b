// Inter-partition secondary index: the copies of an employee live in
// different partitions ("empid_Sales" and "email_Sales"), which spreads the
// load over more partitions but cannot be written in one transaction (see
// eventual-transactions for keeping them consistent). Each lookup is still
// a point or range query in one partition.
package main

import (
	"fmt"

	"github.com/partita/partita/examples/internal/ex"
)

func main() {
	env := ex.Start("inter-partition-index")
	t := env.NewTable("interindex")

	staff := [][3]string{ // id, last name, email
		{"000100", "Adams", "adamsa@contoso.com"},
		{"000152", "Jones", "jonesj@contoso.com"},
		{"000199", "Abbott", "abbotta@contoso.com"},
	}
	for _, s := range staff {
		ex.Add(t, map[string]any{"PartitionKey": "empid_Sales", "RowKey": s[0], "LastName": s[1], "Email": s[2]})
		ex.Add(t, map[string]any{"PartitionKey": "email_Sales", "RowKey": s[2], "LastName": s[1], "EmployeeId": s[0]})
	}

	rows, _ := ex.Query(t, ex.Filter("PartitionKey eq 'email_Sales' and RowKey eq 'jonesj@contoso.com'"))
	ex.Check(len(rows) == 1 && rows[0].Str("EmployeeId") == "000152", "by email: %v", rows)
	rows, _ = ex.Query(t, ex.Filter("PartitionKey eq 'empid_Sales' and RowKey eq '000199'"))
	ex.Check(len(rows) == 1 && rows[0].Str("Email") == "abbotta@contoso.com", "by id: %v", rows)
	ex.Classes(env.Classes(), "point", "point")

	rows, _ = ex.Query(t, ex.Filter("PartitionKey eq 'email_Sales' and RowKey ge 'a' and RowKey lt 'b'"))
	ex.SameKeys(rows, "abbotta@contoso.com", "adamsa@contoso.com")
	rows, _ = ex.Query(t, ex.Filter("PartitionKey eq 'empid_Sales'"))
	ex.SameKeys(rows, "000100", "000152", "000199")
	ex.Classes(env.Classes(), "range", "partition")

	fmt.Println("each index is its own partition; lookups stay point and range queries")
	env.Finish()
}
