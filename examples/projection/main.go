// Server-side projection: $select returns only the named properties, which
// cuts the bytes on the wire when entities are wide and only a column or
// two is needed. A property an entity lacks is simply absent (the service
// returns it as null, which the SDKs drop).
package main

import (
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/partita/partita/examples/internal/ex"
)

func main() {
	env := ex.Start("projection")
	t := env.NewTable("projection")

	for i := range 20 {
		e := map[string]any{"PartitionKey": "Sales", "RowKey": fmt.Sprintf("%06d", i),
			"FirstName": fmt.Sprintf("First%d", i), "LastName": fmt.Sprintf("Last%d", i),
			"Email": fmt.Sprintf("e%d@contoso.com", i), "Notes": string(make([]byte, 2000))}
		if i%2 == 0 {
			delete(e, "Email")
		}
		ex.Add(t, e)
	}

	sel := "Email"
	f := "PartitionKey eq 'Sales'"
	rows, _ := ex.Query(t, &aztables.ListEntitiesOptions{Filter: &f, Select: &sel})
	ex.Equal(len(rows), 20, "entities")
	withEmail := 0
	for _, r := range rows {
		for k := range r {
			ex.Check(k == "Email" || k == "odata.etag", "$select=Email returned %q", k)
		}
		if r.Str("Email") != "" {
			withEmail++
		}
	}
	ex.Equal(withEmail, 10, "entities with an Email")

	sel = "RowKey,LastName"
	rows, _ = ex.Query(t, &aztables.ListEntitiesOptions{Filter: &f, Select: &sel})
	ex.Equal(rows[3].Str("LastName"), "Last3", "LastName of the fourth")
	ex.Equal(rows[3].Str("RowKey"), "000003", "RowKey of the fourth")
	_, hasNotes := rows[3]["Notes"]
	ex.Check(!hasNotes, "Notes returned despite $select")
	ex.Classes(env.Classes(), "partition", "partition")

	fmt.Println("$select returned only the named properties")
	env.Finish()
}
