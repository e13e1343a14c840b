package e2e

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// hammerCounter runs one goroutine per client, each doing tries ETag
// read-modify-write increments of the counter entity (c, c), and checks
// that the final counter equals the number of successful (non-412) writes.
func hammerCounter(t *testing.T, clients []*aztables.Client, tries int) (ok, conflicts int64) {
	t.Helper()
	var nok, nconf atomic.Int64
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func(c *aztables.Client) {
			defer wg.Done()
			for i := 0; i < tries; i++ {
				r, err := c.GetEntity(ctx, "c", "c", nil)
				if err != nil {
					t.Error(err)
					return
				}
				var e aztables.EDMEntity
				if err := e.UnmarshalJSON(r.Value); err != nil {
					t.Error(err)
					return
				}
				n := e.Properties["N"].(int32)
				_, err = c.UpdateEntity(ctx, mustJSONb(map[string]any{"PartitionKey": "c", "RowKey": "c", "N": n + 1}), &aztables.UpdateEntityOptions{IfMatch: &r.ETag, UpdateMode: aztables.UpdateModeReplace})
				var re *azcore.ResponseError
				switch {
				case err == nil:
					nok.Add(1)
				case errors.As(err, &re) && re.StatusCode == 412:
					nconf.Add(1)
				default:
					t.Error(err)
					return
				}
			}
		}(c)
	}
	wg.Wait()
	m, _ := getMap(t, clients[0], "c", "c")
	if int64(m["N"].(float64)) != nok.Load() {
		t.Fatalf("counter = %v, successful writes = %d (conflicts %d)", m["N"], nok.Load(), nconf.Load())
	}
	if nconf.Load() == 0 {
		t.Logf("no conflicts happened; the test exercised no race")
	}
	return nok.Load(), nconf.Load()
}

// TestNoLostUpdates: clients read-modify-write one counter entity with
// ETags; the final counter equals the number of successful (non-412)
// writes.
func TestNoLostUpdates(t *testing.T) {
	s := StartServer(t, "")
	c := newTable(t, serviceClient(t, s))
	if _, err := c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "c", "RowKey": "c", "N": 0}), nil); err != nil {
		t.Fatal(err)
	}
	clients := make([]*aztables.Client, 16)
	for i := range clients {
		clients[i] = c
	}
	ok, conflicts := hammerCounter(t, clients, 40)
	t.Logf("%d successful writes, %d conflicts", ok, conflicts)
}
