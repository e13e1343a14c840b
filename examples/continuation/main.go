// Continuation tokens: a query returns at most 1,000 entities (or $top) per
// response, and the rest comes from follow-up requests that carry the
// NextPartitionKey/NextRowKey of the previous answer. The SDK's pager does
// this; code that stops after the first page silently misses data.
package main

import (
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/partita/partita/examples/internal/ex"
)

const n = 2500

func main() {
	env := ex.Start("continuation")
	t := env.NewTable("continuation")

	for p := range 5 {
		var batch []aztables.TransactionAction
		for i := range n / 5 {
			e := map[string]any{"PartitionKey": fmt.Sprintf("p%d", p), "RowKey": fmt.Sprintf("%05d", i), "N": p*n/5 + i}
			batch = append(batch, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: ex.JSON(e)})
			if len(batch) == 100 {
				_, err := t.SubmitTransaction(ex.Ctx, batch, nil)
				ex.Must(err, "insert batch")
				batch = nil
			}
		}
	}

	// Without $top: pages of at most 1,000.
	rows, pages := ex.Query(t, nil)
	ex.Equal(len(rows), n, "entities")
	ex.Equal(pages, 3, "pages of 1,000")
	for i, r := range rows {
		ex.Equal(int(r.Num("N")), i, "order")
	}

	// With $top=400, resuming by hand from the continuation headers.
	top := int32(400)
	seen, requests := 0, 0
	var nextPK, nextRK *string
	for {
		p := t.NewListEntitiesPager(&aztables.ListEntitiesOptions{Top: &top, NextPartitionKey: nextPK, NextRowKey: nextRK})
		page, err := p.NextPage(ex.Ctx)
		ex.Must(err, "page")
		requests++
		seen += len(page.Entities)
		ex.Check(len(page.Entities) <= 400, "page of %d with $top=400", len(page.Entities))
		if page.NextPartitionKey == nil || *page.NextPartitionKey == "" {
			break
		}
		nextPK, nextRK = page.NextPartitionKey, page.NextRowKey
	}
	ex.Equal(seen, n, "entities over the resumed pages")
	ex.Equal(requests, (n+399)/400, "requests")
	for _, c := range env.Classes() {
		ex.Equal(c, "table", "class")
	}

	fmt.Printf("%d entities over %d pages of 1,000 and %d of 400\n", n, pages, requests)
	env.Finish()
}
