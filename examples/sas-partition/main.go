// A shared access signature for one partition: a user's device gets a
// token that reads and writes that user's partition only. Queries through
// it see only that partition, and writes elsewhere are refused.
//
// Two pitfalls of the Go SDK v1.4.1 show up here, each with its workaround:
// GetTableSASURL appends the table name to a path-style endpoint without a
// "/", and SASSignatureValues.Sign signs spk/srk/epk/erk but leaves them out
// of the query string it returns.
package main

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/partita/partita/examples/internal/ex"
)

func main() {
	env := ex.Start("sas-partition")
	t, tableName := env.NewTableNamed("saspartition")
	for _, user := range []string{"alice", "bob", "carol"} {
		for i := range 3 {
			ex.Add(t, map[string]any{"PartitionKey": user, "RowKey": fmt.Sprintf("note%d", i), "Text": "a note of " + user})
		}
	}

	// Pitfall 1: the URL lacks the "/" between account and table.
	admin, err := aztables.NewClientWithSharedKey(env.Endpoint+"/"+tableName, env.Cred, nil)
	ex.Must(err, "admin client")
	start, expiry := time.Now().Add(-5*time.Minute), time.Now().Add(time.Hour)
	u, err := admin.GetTableSASURL(aztables.SASPermissions{Read: true, Add: true, Update: true}, start, expiry)
	ex.Must(err, "GetTableSASURL")
	ex.Check(strings.Contains(u, ex.DevAccount+tableName+"?"), "GetTableSASURL no longer drops the \"/\": %s", u)

	// Pitfall 2: sign the range, then add it to the query string yourself.
	v := aztables.SASSignatureValues{Protocol: aztables.SASProtocolHTTPSandHTTP, StartTime: start, ExpiryTime: expiry,
		Permissions: aztables.SASPermissions{Read: true, Add: true, Update: true}.String(), TableName: tableName,
		StartPartitionKey: "alice", EndPartitionKey: "alice"}
	qs, err := v.Sign(env.Cred)
	ex.Must(err, "sign")
	q, err := url.ParseQuery(qs)
	ex.Must(err, "parse SAS")
	ex.Check(q.Get("spk") == "", "Sign now writes spk; drop the workaround")
	asIs := sasClient(env, tableName, qs)
	_, err = asIs.GetEntity(ex.Ctx, "alice", "note0", nil)
	ex.Check(ex.Status(err) == 403 && ex.IsCode(err, "AuthenticationFailed"), "the SDK's token as is: got %v, want 403 AuthenticationFailed (its signature covers spk/epk)", err)
	q.Set("spk", "alice")
	q.Set("epk", "alice")
	alice := sasClient(env, tableName, q.Encode())

	// Alice's token: her partition only.
	rows, _ := ex.Query(alice, nil)
	ex.Equal(len(rows), 3, "entities a whole-table query returns through alice's token")
	for _, r := range rows {
		ex.Equal(r.Str("PartitionKey"), "alice", "PartitionKey")
	}
	_, err = alice.GetEntity(ex.Ctx, "bob", "note0", nil)
	ex.Check(ex.Status(err) == 403, "reading bob's note: got %v, want 403", err)
	_, err = alice.AddEntity(ex.Ctx, ex.JSON(map[string]any{"PartitionKey": "bob", "RowKey": "forged"}), nil)
	ex.Check(ex.Status(err) == 403, "writing into bob's partition: got %v, want 403", err)
	_, err = alice.AddEntity(ex.Ctx, ex.JSON(map[string]any{"PartitionKey": "alice", "RowKey": "note3", "Text": "new"}), nil)
	ex.Must(err, "writing into her own partition")
	rows, _ = ex.Query(t, ex.Filter("PartitionKey eq 'bob'"))
	ex.Equal(len(rows), 3, "bob's notes")
	ex.Classes(env.Classes(), "partition", "partition")

	fmt.Println("the token reads and writes alice's partition and nothing else")
	env.Finish()
}

// sasClient is a client of the table that authenticates with the token.
func sasClient(env *ex.Env, table, sas string) *aztables.Client {
	c, err := aztables.NewClientWithNoCredential(env.Endpoint+"/"+table+"?"+sas, ex.Options(env.Recorder()))
	ex.Must(err, "SAS client")
	return c
}
