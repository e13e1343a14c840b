package e2e

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// TestNoLostUpdates: clients read-modify-write one counter entity with
// ETags; the final counter equals the number of successful (non-412)
// writes.
func TestNoLostUpdates(t *testing.T) {
	s := StartServer(t, "")
	c := newTable(t, serviceClient(t, s))
	if _, err := c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "c", "RowKey": "c", "N": 0}), nil); err != nil {
		t.Fatal(err)
	}
	const clients, tries = 16, 40
	var ok, conflicts atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
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
					ok.Add(1)
				case errors.As(err, &re) && re.StatusCode == 412:
					conflicts.Add(1)
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	m, _ := getMap(t, c, "c", "c")
	if int64(m["N"].(float64)) != ok.Load() {
		t.Fatalf("counter = %v, successful writes = %d (conflicts %d)", m["N"], ok.Load(), conflicts.Load())
	}
	if conflicts.Load() == 0 {
		t.Logf("no conflicts happened; the test exercised no race")
	}
	t.Logf("%d successful writes, %d conflicts", ok.Load(), conflicts.Load())
}
