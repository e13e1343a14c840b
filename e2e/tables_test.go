package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

func listTables(t *testing.T, svc *aztables.ServiceClient, o *aztables.ListTablesOptions) []string {
	t.Helper()
	var names []string
	pager := svc.NewListTablesPager(o)
	for pager.More() {
		p, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range p.Tables {
			names = append(names, *tb.Name)
		}
	}
	return names
}

func TestTables(t *testing.T) {
	s := StartServer(t, "")
	svc := serviceClient(t, s)

	for _, n := range []string{"Alpha", "beta", "Gamma1", "delta"} {
		if _, err := svc.CreateTable(ctx, n, nil); err != nil {
			t.Fatalf("CreateTable(%s): %v", n, err)
		}
	}
	// Case-insensitive uniqueness; the creation case is kept.
	_, err := svc.CreateTable(ctx, "ALPHA", nil)
	wantErr(t, err, 409, "TableAlreadyExists")
	if got := strings.Join(listTables(t, svc, nil), ","); got != "Alpha,beta,delta,Gamma1" {
		t.Errorf("tables = %s", got)
	}
	// Paging with $top follows NextTableName.
	if got := strings.Join(listTables(t, svc, &aztables.ListTablesOptions{Top: to.Ptr[int32](1)}), ","); got != "Alpha,beta,delta,Gamma1" {
		t.Errorf("tables with top=1 = %s", got)
	}
	// Prefix filter on TableName.
	f := "TableName ge 'b' and TableName lt 'c'"
	if got := strings.Join(listTables(t, svc, &aztables.ListTablesOptions{Filter: &f}), ","); got != "beta" {
		t.Errorf("filtered tables = %s", got)
	}
	// Name rules.
	for _, tt := range []struct {
		name, code string
	}{
		{"1nvalid", "InvalidResourceName"},
		{"invalid_table_name", "InvalidResourceName"},
		{"ab", "OutOfRangeInput"},
		{strings.Repeat("a", 64), "OutOfRangeInput"},
		{"Tables", "InvalidInput"},
	} {
		_, err := svc.CreateTable(ctx, tt.name, nil)
		wantErr(t, err, 400, tt.code)
	}
	if _, err := svc.CreateTable(ctx, strings.Repeat("a", 63), nil); err != nil {
		t.Errorf("63-char name: %v", err)
	}
	// Entities go through any case of the name.
	c := svc.NewClient("ALPHA")
	if _, err := c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "r"}), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.NewClient("alpha").GetEntity(ctx, "p", "r", nil); err != nil {
		t.Fatal(err)
	}
	// Delete, then the name is gone and reusable; the old entities are not.
	if _, err := svc.DeleteTable(ctx, "alpha", nil); err != nil {
		t.Fatal(err)
	}
	_, err = svc.DeleteTable(ctx, "alpha", nil)
	wantErr(t, err, 404, "ResourceNotFound")
	_, err = c.GetEntity(ctx, "p", "r", nil)
	wantErr(t, err, 404, "TableNotFound")
	for i := 0; ; i++ {
		_, err = svc.CreateTable(ctx, "Alpha", nil)
		if err == nil {
			break
		}
		wantErr(t, err, 409, "TableBeingDeleted")
		if i > 1000 {
			t.Fatal("table stays in TableBeingDeleted")
		}
	}
	_, err = c.GetEntity(ctx, "p", "r", nil)
	wantErr(t, err, 404, "ResourceNotFound")

	// Raw forms: Tables('name') GET, Prefer: return-no-content, fullmetadata.
	st, h, body := rawDo(t, s, "POST", "/"+devAccount+"/Tables", `{"TableName":"quiet"}`, map[string]string{"Prefer": "return-no-content"})
	if st != 204 || h.Get("Preference-Applied") != "return-no-content" || !strings.HasSuffix(h.Get("Location"), "/Tables('quiet')") {
		t.Errorf("create with return-no-content: %d %v %s", st, h, body)
	}
	st, _, body = rawDo(t, s, "GET", "/"+devAccount+"/Tables('quiet')", "", map[string]string{"Accept": "application/json;odata=fullmetadata"})
	if st != 200 || !strings.Contains(body, `"odata.type":"devstoreaccount1.Tables"`) || !strings.Contains(body, `"TableName":"quiet"`) {
		t.Errorf("get table: %d %s", st, body)
	}
	st, _, body = rawDo(t, s, "GET", "/"+devAccount+"/Tables?$filter="+strings.ReplaceAll("Name eq 'x'", " ", "%20"), "", nil)
	if st != 200 || body != fmt.Sprintf(`{"odata.metadata":"%s/%s/$metadata#Tables","value":[]}`, s.URL, devAccount) {
		t.Errorf("filter on another property: %d %s", st, body)
	}
}
