package e2e

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

func act(t *testing.T, typ aztables.TransactionType, m map[string]any) aztables.TransactionAction {
	return aztables.TransactionAction{ActionType: typ, Entity: mustJSON(t, m)}
}

// wantBatchErr asserts a failed transaction reports code (the newest Go SDK
// builds the error from the outer 202, so the code comes from its
// x-ms-error-code header).
func wantBatchErr(t *testing.T, err error, code string) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want a ResponseError with code %s", err, code)
	}
	if re.ErrorCode != code {
		t.Fatalf("ErrorCode = %q (status %d), want %s", re.ErrorCode, re.StatusCode, code)
	}
}

func count(t *testing.T, c *aztables.Client) int {
	rows, _ := listAll(t, c, nil)
	return len(rows)
}

func TestBatch(t *testing.T) {
	s := StartServer(t, "")
	svc := serviceClient(t, s)

	t.Run("EveryActionMixed", func(t *testing.T) {
		c := newTable(t, svc)
		for _, rk := range []string{"upd", "mrg", "del", "rep"} {
			if _, err := c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": rk, "Old": 1}), nil); err != nil {
				t.Fatal(err)
			}
		}
		_, etag := getMap(t, c, "p", "upd")
		resp, err := c.SubmitTransaction(ctx, []aztables.TransactionAction{
			act(t, aztables.TransactionTypeAdd, map[string]any{"PartitionKey": "p", "RowKey": "new", "V": 1}),
			{ActionType: aztables.TransactionTypeUpdateMerge, Entity: mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "upd", "V": 2}), IfMatch: &etag},
			act(t, aztables.TransactionTypeUpdateReplace, map[string]any{"PartitionKey": "p", "RowKey": "rep", "V": 3}),
			act(t, aztables.TransactionTypeInsertMerge, map[string]any{"PartitionKey": "p", "RowKey": "mrg", "V": 4}),
			act(t, aztables.TransactionTypeInsertReplace, map[string]any{"PartitionKey": "p", "RowKey": "ins", "V": 5}),
			act(t, aztables.TransactionTypeDelete, map[string]any{"PartitionKey": "p", "RowKey": "del"}),
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp
		m, _ := getMap(t, c, "p", "upd")
		if m["Old"] != float64(1) || m["V"] != float64(2) {
			t.Errorf("merged: %v", m)
		}
		m, _ = getMap(t, c, "p", "rep")
		if _, ok := m["Old"]; ok || m["V"] != float64(3) {
			t.Errorf("replaced: %v", m)
		}
		m, _ = getMap(t, c, "p", "mrg")
		if m["Old"] != float64(1) || m["V"] != float64(4) {
			t.Errorf("insert-merged: %v", m)
		}
		_, err = c.GetEntity(ctx, "p", "del", nil)
		wantErr(t, err, 404, "ResourceNotFound")
		if n := count(t, c); n != 5 {
			t.Errorf("%d entities, want 5", n)
		}
	})

	t.Run("ConflictInTheMiddleChangesNothing", func(t *testing.T) {
		c := newTable(t, svc)
		if _, err := c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "b", "V": 0}), nil); err != nil {
			t.Fatal(err)
		}
		stale := azcore.ETag(`W/"datetime'2020-01-01T00%3A00%3A00Z'"`)
		_, err := c.SubmitTransaction(ctx, []aztables.TransactionAction{
			act(t, aztables.TransactionTypeAdd, map[string]any{"PartitionKey": "p", "RowKey": "a"}),
			{ActionType: aztables.TransactionTypeUpdateReplace, Entity: mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "b", "V": 1}), IfMatch: &stale},
			act(t, aztables.TransactionTypeAdd, map[string]any{"PartitionKey": "p", "RowKey": "c"}),
		}, nil)
		wantBatchErr(t, err, "UpdateConditionNotSatisfied")
		if n := count(t, c); n != 1 {
			t.Errorf("%d entities after a failed batch, want 1", n)
		}
		m, _ := getMap(t, c, "p", "b")
		if m["V"] != float64(0) {
			t.Errorf("b changed: %v", m)
		}
		// Inserting an existing entity fails the whole batch too.
		_, err = c.SubmitTransaction(ctx, []aztables.TransactionAction{
			act(t, aztables.TransactionTypeAdd, map[string]any{"PartitionKey": "p", "RowKey": "z"}),
			act(t, aztables.TransactionTypeAdd, map[string]any{"PartitionKey": "p", "RowKey": "b"}),
		}, nil)
		wantBatchErr(t, err, "EntityAlreadyExists")
		if n := count(t, c); n != 1 {
			t.Errorf("%d entities, want 1", n)
		}
	})

	t.Run("Rules", func(t *testing.T) {
		c := newTable(t, svc)
		_, err := c.SubmitTransaction(ctx, []aztables.TransactionAction{
			act(t, aztables.TransactionTypeAdd, map[string]any{"PartitionKey": "p", "RowKey": "1"}),
			act(t, aztables.TransactionTypeAdd, map[string]any{"PartitionKey": "q", "RowKey": "2"}),
		}, nil)
		wantBatchErr(t, err, "CommandsInBatchActOnDifferentPartitions")
		_, err = c.SubmitTransaction(ctx, []aztables.TransactionAction{
			act(t, aztables.TransactionTypeAdd, map[string]any{"PartitionKey": "p", "RowKey": "1"}),
			act(t, aztables.TransactionTypeInsertMerge, map[string]any{"PartitionKey": "p", "RowKey": "1"}),
		}, nil)
		wantBatchErr(t, err, "InvalidDuplicateRow")
		_, err = c.SubmitTransaction(ctx, []aztables.TransactionAction{
			act(t, aztables.TransactionTypeAdd, map[string]any{"PartitionKey": "p", "RowKey": "a/b"}),
		}, nil)
		wantBatchErr(t, err, "OutOfRangeInput")
		anyTag := azcore.ETagAny
		// A delete of a key with a character a key cannot hold is the
		// service's "1:One of the request inputs is out of range." in a
		// batch (a real observation in the protocol notes), though alone
		// it is not found; a conditional update of such a key, and either
		// of a key too long, find nothing, as on their own.
		for _, tt := range []struct {
			kind     aztables.TransactionType
			rk, want string
		}{
			{aztables.TransactionTypeDelete, "a#b", "OutOfRangeInput"},
			{aztables.TransactionTypeDelete, "a?b", "OutOfRangeInput"},
			{aztables.TransactionTypeDelete, strings.Repeat("k", 1100), "ResourceNotFound"},
			{aztables.TransactionTypeUpdateMerge, "a#b", "ResourceNotFound"},
			{aztables.TransactionTypeUpdateReplace, strings.Repeat("k", 1100), "ResourceNotFound"},
		} {
			_, err = c.SubmitTransaction(ctx, []aztables.TransactionAction{
				act(t, aztables.TransactionTypeAdd, map[string]any{"PartitionKey": "p", "RowKey": "ok"}),
				{ActionType: tt.kind, Entity: mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": tt.rk}), IfMatch: &anyTag},
			}, nil)
			wantBatchErr(t, err, tt.want)
			if tt.want == "OutOfRangeInput" && !strings.Contains(err.Error(), "1:One of the request inputs is out of range.") {
				t.Errorf("delete of %q: %v, want the service's message with the operation's index", tt.rk, err)
			}
		}
		_, err = svc.NewClient("nosuchtable").SubmitTransaction(ctx, []aztables.TransactionAction{
			act(t, aztables.TransactionTypeAdd, map[string]any{"PartitionKey": "p", "RowKey": "1"}),
		}, nil)
		wantBatchErr(t, err, "TableNotFound")
		if n := count(t, c); n != 0 {
			t.Errorf("%d entities after failed batches, want 0", n)
		}
	})

	t.Run("Limits", func(t *testing.T) {
		c := newTable(t, svc)
		ops := func(n, size int) []aztables.TransactionAction {
			var a []aztables.TransactionAction
			for i := 0; i < n; i++ {
				a = append(a, act(t, aztables.TransactionTypeAdd, map[string]any{"PartitionKey": "p", "RowKey": fmt.Sprintf("%03d", i),
					"D1": strings.Repeat("x", size/2), "D2": strings.Repeat("y", size-size/2)}))
			}
			return a
		}
		_, err := c.SubmitTransaction(ctx, ops(101, 1), nil)
		wantBatchErr(t, err, "InvalidInput")
		if n := count(t, c); n != 0 {
			t.Errorf("101 ops wrote %d entities", n)
		}
		if _, err := c.SubmitTransaction(ctx, ops(100, 1), nil); err != nil {
			t.Fatalf("100 ops: %v", err)
		}
		if n := count(t, c); n != 100 {
			t.Errorf("100 ops wrote %d entities", n)
		}
		// 4 MiB body: 100 entities of ~42 KB fit; ~43 KB each do not.
		c2 := newTable(t, svc)
		if _, err := c2.SubmitTransaction(ctx, ops(100, 41000), nil); err != nil {
			t.Fatalf("just under 4 MiB: %v", err)
		}
		_, err = newTable(t, svc).SubmitTransaction(ctx, ops(100, 43000), nil)
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != 413 || re.ErrorCode != "RequestBodyTooLarge" {
			t.Fatalf("just over 4 MiB: %v", err)
		}
	})

	t.Run("QuotesAndCommas", func(t *testing.T) {
		c := newTable(t, svc)
		// The Go SDK's batch writer does not double quotes in sub-request
		// URLs; partita reads a lone quote as part of the key. Two quotes
		// in a row: DoubledQuotesFromGo.
		keys := []string{"O'Brien", "a,b", "it's, ok", "ünï 😀", "'", "end'"}
		var a []aztables.TransactionAction
		for _, k := range keys {
			a = append(a, act(t, aztables.TransactionTypeInsertReplace, map[string]any{"PartitionKey": "p'1", "RowKey": k, "K": k}))
		}
		if _, err := c.SubmitTransaction(ctx, a, nil); err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			m, _ := getMap(t, c, "p'1", k)
			if m["K"] != k {
				t.Errorf("%q: %v", k, m)
			}
		}
		a = nil
		for _, k := range keys {
			a = append(a, act(t, aztables.TransactionTypeDelete, map[string]any{"PartitionKey": "p'1", "RowKey": k}))
		}
		if _, err := c.SubmitTransaction(ctx, a, nil); err != nil {
			t.Fatal(err)
		}
		if n := count(t, c); n != 0 {
			t.Errorf("%d left after deleting all", n)
		}
	})

	t.Run("DoubledQuotesFromGo", func(t *testing.T) {
		// Two quotes in a row from the Go SDK's batch writer read as one
		// quote in strict OData, another key: a merge of a''b wrote a
		// new entity a'b, a delete of a''b deleted a'b, and a key
		// holding ',RowKey=' split into other keys. The body's keys
		// (updates) and the Go SDK's way of writing them (deletes) now
		// decide.
		c := newTable(t, svc)
		one, two, split := "a'b", "a''b", "x',RowKey='y"
		for _, pk := range []string{one, two} {
			if _, err := c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": pk, "RowKey": "r", "Was": pk}), nil); err != nil {
				t.Fatal(err)
			}
		}
		for _, a := range []aztables.TransactionAction{
			act(t, aztables.TransactionTypeUpdateMerge, map[string]any{"PartitionKey": two, "RowKey": "r", "Merged": true}),
			act(t, aztables.TransactionTypeInsertReplace, map[string]any{"PartitionKey": split, "RowKey": "r", "Was": split}),
		} {
			if _, err := c.SubmitTransaction(ctx, []aztables.TransactionAction{a}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if m, _ := getMap(t, c, two, "r"); m["Merged"] != true || m["Was"] != two {
			t.Errorf("%q after the merge: %v", two, m)
		}
		if m, _ := getMap(t, c, one, "r"); m["Merged"] != nil || m["Was"] != one {
			t.Errorf("%q after a merge of %q: %v", one, two, m)
		}
		if m, _ := getMap(t, c, split, "r"); m["Was"] != split {
			t.Errorf("%q after its insert-or-replace: %v", split, m)
		}
		// The delete, from the SDK as it is and from one whose
		// User-Agent starts with an application id.
		cred, err := aztables.NewSharedKeyCredential(devAccount, devKey)
		if err != nil {
			t.Fatal(err)
		}
		app, err := aztables.NewClientWithSharedKey(s.Endpoint()+"/"+tableName(c), cred,
			&aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Telemetry: policy.TelemetryOptions{ApplicationID: "myapp"}}})
		if err != nil {
			t.Fatal(err)
		}
		for i, dc := range []*aztables.Client{c, app} {
			if i > 0 {
				if _, err := c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": two, "RowKey": "r", "Was": two}), nil); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := dc.SubmitTransaction(ctx, []aztables.TransactionAction{
				act(t, aztables.TransactionTypeDelete, map[string]any{"PartitionKey": two, "RowKey": "r"}),
			}, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := c.GetEntity(ctx, two, "r", nil); err == nil {
				t.Errorf("client %d: %q still there after its delete", i, two)
			}
			if m, _ := getMap(t, c, one, "r"); m["Was"] != one {
				t.Errorf("client %d: %q after a delete of %q: %v", i, one, two, m)
			}
		}
		if n := count(t, c); n != 2 {
			t.Errorf("%d entities, want %q and %q", n, one, split)
		}
	})
}

// TestBatchSerializable: concurrent overlapping batches on one partition
// leave a state that some serial order of whole batches produces. Every
// batch writes the same value (its id) to a random subset of entities, so
// each entity's final value names the last batch that touched it; the
// batches are serializable iff the "last writer" relation has no cycle.
func TestBatchSerializable(t *testing.T) {
	s := StartServer(t, "")
	c := newTable(t, serviceClient(t, s))
	const entities, clients, perClient = 20, 8, 15
	type batch struct {
		id   int
		keys []int
	}
	var mu sync.Mutex
	var done []batch
	var wg sync.WaitGroup
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := 0; i < perClient; i++ {
				id := w*perClient + i + 1
				keys := rng.Perm(entities)[:2+rng.IntN(entities-2)]
				var a []aztables.TransactionAction
				for _, k := range keys {
					a = append(a, act(t, aztables.TransactionTypeInsertReplace, map[string]any{"PartitionKey": "p", "RowKey": fmt.Sprintf("%02d", k), "B": id}))
				}
				if _, err := c.SubmitTransaction(ctx, a, nil); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				done = append(done, batch{id, keys})
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	final := map[int]int{}
	rows, _ := listAll(t, c, nil)
	for _, r := range rows {
		var k int
		fmt.Sscanf(r.RK, "%d", &k)
		final[k] = int(r.Props["B"].(float64))
	}
	// For entity k with final writer f, every other batch that wrote k
	// must come before f: edge other -> f. A cycle means no serial order.
	edges := map[int][]int{}
	for _, b := range done {
		for _, k := range b.keys {
			if f := final[k]; f != b.id {
				edges[b.id] = append(edges[b.id], f)
			}
		}
	}
	if cyc := findCycle(edges); cyc != 0 {
		t.Fatalf("batches are not serializable: cycle through batch %d", cyc)
	}
	if len(done) != clients*perClient {
		t.Fatalf("%d batches done, want %d", len(done), clients*perClient)
	}
}

// TestBatchOperationFormat: an insert in a changeset answers in its own
// Accept's format and says which Prefer it applied, as the same insert on
// its own does (it took the outer request's format, and sent no
// Preference-Applied for return-content).
func TestBatchOperationFormat(t *testing.T) {
	s := StartServer(t, "")
	if st, _, body := rawDo(t, s, "POST", "/"+devAccount+"/Tables", `{"TableName":"fmt"}`, nil); st != 201 {
		t.Fatalf("create table: %d %s", st, body)
	}
	tbl := "/" + devAccount + "/fmt"
	batch := "--batch_f\r\nContent-Type: multipart/mixed; boundary=changeset_f\r\n\r\n" +
		"--changeset_f\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" +
		"POST " + s.URL + tbl + " HTTP/1.1\r\nAccept: application/json;odata=nometadata\r\nPrefer: return-content\r\nContent-Type: application/json\r\n\r\n" +
		`{"PartitionKey":"p","RowKey":"r","A":1}` + "\r\n" +
		"--changeset_f--\r\n--batch_f--\r\n"
	st, _, body := rawDo(t, s, "POST", "/"+devAccount+"/$batch", batch, map[string]string{"Content-Type": "multipart/mixed; boundary=batch_f"})
	if st != 202 || !strings.Contains(body, "HTTP/1.1 201") {
		t.Fatalf("batch: %d %.400s", st, body)
	}
	for _, want := range []string{"Preference-Applied: return-content", "odata=nometadata", `"A":1`} {
		if !strings.Contains(body, want) {
			t.Errorf("the insert's sub-response lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "odata.metadata") {
		t.Errorf("the insert's sub-response has odata.metadata under Accept nometadata:\n%s", body)
	}
}
