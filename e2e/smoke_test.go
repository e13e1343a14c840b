package e2e

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

func TestSmoke(t *testing.T) {
	s := StartServer(t, "")
	svc := serviceClient(t, s)
	c := newTable(t, svc)
	ctx := context.Background()
	e, _ := json.Marshal(map[string]any{"PartitionKey": "p1", "RowKey": "r1", "Age": 23})
	if _, err := c.AddEntity(ctx, e, nil); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetEntity(ctx, "p1", "r1", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s etag=%s", got.Value, got.ETag)
	pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{})
	for pager.More() {
		p, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("page %d", len(p.Entities))
	}
}
