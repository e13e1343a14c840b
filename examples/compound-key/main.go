// Compound key: review entities sit next to the employee under RowKeys
// "empid_<id>_review_<year>", so one employee's reviews are a range query
// and one review is a point query; $select keeps the answer small.
package main

import (
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/partita/partita/examples/internal/ex"
)

func main() {
	env := ex.Start("compound-key")
	t := env.NewTable("compoundkey")

	for _, id := range []string{"000122", "000123", "000124"} {
		for _, year := range []int{2022, 2023, 2024} {
			ex.Add(t, map[string]any{"PartitionKey": "Sales", "RowKey": fmt.Sprintf("empid_%s_review_%d", id, year),
				"ManagerRating": year - 2020, "PeerRating": 3, "Comments": "review of " + id})
		}
	}

	rows, _ := ex.Query(t, ex.Filter("PartitionKey eq 'Sales' and RowKey eq 'empid_000123_review_2023'"))
	ex.Check(len(rows) == 1 && rows[0].Num("ManagerRating") == 3, "one review: %v", rows)

	sel := "RowKey,ManagerRating,PeerRating,Comments"
	f := "PartitionKey eq 'Sales' and RowKey ge 'empid_000123' and RowKey lt 'empid_000124'"
	rows, _ = ex.Query(t, &aztables.ListEntitiesOptions{Filter: &f, Select: &sel})
	ex.SameKeys(rows, "empid_000123_review_2022", "empid_000123_review_2023", "empid_000123_review_2024")
	for _, r := range rows {
		_, hasPK := r["PartitionKey"]
		ex.Check(!hasPK, "$select left PartitionKey in %v", r)
	}
	ex.Classes(env.Classes(), "point", "range")

	fmt.Println("one review is a point query, all of an employee's reviews a range query")
	env.Finish()
}
