package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

var ctx = context.Background()

// wantErr asserts err is an azcore.ResponseError with status and code.
func wantErr(t *testing.T, err error, status int, code string) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want a ResponseError %d %s", err, status, code)
	}
	if re.StatusCode != status || re.ErrorCode != code {
		t.Fatalf("got %d %s, want %d %s", re.StatusCode, re.ErrorCode, status, code)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func getMap(t *testing.T, c *aztables.Client, pk, rk string) (map[string]any, azcore.ETag) {
	t.Helper()
	r, err := c.GetEntity(ctx, pk, rk, nil)
	if err != nil {
		t.Fatalf("GetEntity(%q,%q): %v", pk, rk, err)
	}
	var m map[string]any
	if err := json.Unmarshal(r.Value, &m); err != nil {
		t.Fatal(err)
	}
	return m, r.ETag
}

func TestEntities(t *testing.T) {
	s := StartServer(t, "")
	svc := serviceClient(t, s)

	t.Run("CRUD", func(t *testing.T) {
		c := newTable(t, svc)
		add, err := c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "r", "Name": "Ann", "Age": 23}), nil)
		if err != nil {
			t.Fatal(err)
		}
		m, etag := getMap(t, c, "p", "r")
		if etag != add.ETag {
			t.Errorf("GetEntity ETag %s != AddEntity ETag %s", etag, add.ETag)
		}
		if m["Name"] != "Ann" || m["Age"] != float64(23) {
			t.Errorf("entity = %v", m)
		}
		if !strings.Contains(m["odata.etag"].(string), "datetime'") {
			t.Errorf("odata.etag = %v", m["odata.etag"])
		}
		// Timestamp equals the time inside the ETag.
		ts := m["Timestamp"].(string)
		if !strings.Contains(string(etag), strings.ReplaceAll(ts, ":", "%3A")) {
			t.Errorf("ETag %s does not carry Timestamp %s", etag, ts)
		}

		// Duplicate insert.
		_, err = c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "r"}), nil)
		wantErr(t, err, 409, "EntityAlreadyExists")

		// Merge keeps Age, adds City.
		up, err := c.UpdateEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "r", "City": "Oslo"}), &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeMerge, IfMatch: &etag})
		if err != nil {
			t.Fatal(err)
		}
		m, etag2 := getMap(t, c, "p", "r")
		if m["Age"] != float64(23) || m["City"] != "Oslo" || etag2 != up.ETag || etag2 == etag {
			t.Errorf("after merge: %v etag %s (update said %s, before %s)", m, etag2, up.ETag, etag)
		}
		// Stale ETag → 412, entity unchanged.
		_, err = c.UpdateEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "r", "X": 1}), &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeReplace, IfMatch: &etag})
		wantErr(t, err, 412, "UpdateConditionNotSatisfied")
		// Replace drops Age and City.
		if _, err := c.UpdateEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "r", "Only": true}), &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		m, _ = getMap(t, c, "p", "r")
		if _, ok := m["Age"]; ok || m["Only"] != true {
			t.Errorf("after replace: %v", m)
		}
		// Upserts create and merge/replace.
		if _, err := c.UpsertEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "u", "A": 1}), &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeMerge}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.UpsertEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "u", "B": 2}), &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeMerge}); err != nil {
			t.Fatal(err)
		}
		m, _ = getMap(t, c, "p", "u")
		if m["A"] != float64(1) || m["B"] != float64(2) {
			t.Errorf("after upsert merge: %v", m)
		}
		if _, err := c.UpsertEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "u", "C": 3}), &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		m, _ = getMap(t, c, "p", "u")
		if _, ok := m["A"]; ok || m["C"] != float64(3) {
			t.Errorf("after upsert replace: %v", m)
		}
		// Update of a missing entity is 404, not an upsert.
		_, err = c.UpdateEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "missing"}), nil)
		wantErr(t, err, 404, "ResourceNotFound")
		// Delete with a stale ETag, then for real, then again.
		_, err = c.DeleteEntity(ctx, "p", "r", &aztables.DeleteEntityOptions{IfMatch: &etag})
		wantErr(t, err, 412, "UpdateConditionNotSatisfied")
		if _, err := c.DeleteEntity(ctx, "p", "r", nil); err != nil {
			t.Fatal(err)
		}
		_, err = c.DeleteEntity(ctx, "p", "r", nil)
		wantErr(t, err, 404, "ResourceNotFound")
		_, err = c.GetEntity(ctx, "p", "r", nil)
		wantErr(t, err, 404, "ResourceNotFound")
	})

	t.Run("MissingTable", func(t *testing.T) {
		c := svc.NewClient("nosuchtable")
		_, err := c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "r"}), nil)
		wantErr(t, err, 404, "TableNotFound")
		_, err = c.GetEntity(ctx, "p", "r", nil)
		wantErr(t, err, 404, "TableNotFound")
		pager := c.NewListEntitiesPager(nil)
		_, err = pager.NextPage(ctx)
		wantErr(t, err, 404, "TableNotFound")
	})

	t.Run("EDMTypes", func(t *testing.T) {
		c := newTable(t, svc)
		when := time.Date(2013, 8, 2, 17, 37, 43, 9004300, time.UTC)
		e := aztables.EDMEntity{
			Entity: aztables.Entity{PartitionKey: "p", RowKey: "edm"},
			Properties: map[string]any{
				"Bool":     true,
				"Int32":    int32(-1234),
				"Int64":    aztables.EDMInt64(123456789012),
				"Double":   1234.5,
				"Integral": 5.0, // the SDK writes 5: stored as Int32, like the real service
				"String":   "héllo 'world'",
				"Guid":     aztables.EDMGUID("4185404a-5818-48c3-b9be-f217df0dba6f"),
				"DateTime": aztables.EDMDateTime(when),
				"Binary":   aztables.EDMBinary([]byte{0, 1, 2, 255}),
			},
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.AddEntity(ctx, b, nil); err != nil {
			t.Fatal(err)
		}
		r, err := c.GetEntity(ctx, "p", "edm", nil)
		if err != nil {
			t.Fatal(err)
		}
		var got aztables.EDMEntity
		if err := json.Unmarshal(r.Value, &got); err != nil {
			t.Fatal(err)
		}
		p := got.Properties
		if p["Bool"] != true || p["Int32"] != int32(-1234) || p["Int64"] != aztables.EDMInt64(123456789012) ||
			p["Double"] != 1234.5 || p["String"] != "héllo 'world'" || p["Guid"] != aztables.EDMGUID("4185404a-5818-48c3-b9be-f217df0dba6f") {
			t.Errorf("properties = %#v", p)
		}
		if dt, ok := p["DateTime"].(aztables.EDMDateTime); !ok || !time.Time(dt).Equal(when) {
			t.Errorf("DateTime = %#v, want %v", p["DateTime"], when)
		}
		if bin, ok := p["Binary"].(aztables.EDMBinary); !ok || string(bin) != "\x00\x01\x02\xff" {
			t.Errorf("Binary = %#v", p["Binary"])
		}
		// Raw JSON forms: Int64 as annotated string, doubles with ".0", NaN annotated.
		rawBody := []byte(`{"PartitionKey":"p","RowKey":"raw","D@odata.type":"Edm.Double","D":"NaN","Inf@odata.type":"Edm.Double","Inf":"-Infinity","F":5.0,"G@odata.type":"Edm.Double","G":2,"Big":3000000000}`)
		// Sent raw: the SDK would re-marshal 5.0 as 5.
		if st, _, b := rawDo(t, s, "POST", "/"+devAccount+"/"+tableNames[c], string(rawBody), nil); st != 201 {
			t.Fatalf("raw insert: %d %s", st, b)
		}
		r, err = c.GetEntity(ctx, "p", "raw", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"D@odata.type":"Edm.Double"`, `"D":"NaN"`, `"Inf":"-Infinity"`, `"F":5`, `"G":2`} {
			if !strings.Contains(string(r.Value), want) {
				t.Errorf("GetEntity body %s lacks %s", r.Value, want)
			}
		}
		// The SDK re-marshals the body, so check the exact text with a raw request.
		body := rawGet(t, s, "/"+devAccount+"/"+tableNames[c]+"(PartitionKey='p',RowKey='raw')")
		for _, want := range []string{`"F":5.0`, `"G":2.0`, `"Big":3000000000.0`, `"D@odata.type":"Edm.Double","D":"NaN"`} {
			if !strings.Contains(body, want) {
				t.Errorf("raw body %s lacks %s", body, want)
			}
		}
	})

	t.Run("Limits", func(t *testing.T) {
		c := newTable(t, svc)
		add := func(m map[string]any) error {
			_, err := c.AddEntity(ctx, mustJSON(t, m), nil)
			return err
		}
		wantErr(t, add(map[string]any{"PartitionKey": "a/b", "RowKey": "r"}), 400, "OutOfRangeInput")
		wantErr(t, add(map[string]any{"PartitionKey": "p", "RowKey": "a#b"}), 400, "OutOfRangeInput")
		wantErr(t, add(map[string]any{"PartitionKey": "p", "RowKey": "a\u0001"}), 400, "OutOfRangeInput")
		wantErr(t, add(map[string]any{"PartitionKey": strings.Repeat("k", 513), "RowKey": "r"}), 400, "PropertyValueTooLarge")
		if err := add(map[string]any{"PartitionKey": strings.Repeat("k", 512), "RowKey": "r"}); err != nil {
			t.Errorf("512-char key: %v", err)
		}
		// The Go SDK refuses a missing key itself; send it raw.
		if st, h, b := rawDo(t, s, "POST", "/"+devAccount+"/"+tableNames[c], `{"RowKey":"r"}`, nil); st != 400 || h.Get("x-ms-error-code") != "PropertiesNeedValue" {
			t.Errorf("insert without PartitionKey: %d %s", st, b)
		}
		wantErr(t, add(map[string]any{"PartitionKey": "p", "RowKey": "s", "S": strings.Repeat("x", 32769)}), 400, "PropertyValueTooLarge")
		if err := add(map[string]any{"PartitionKey": "p", "RowKey": "s", "S": strings.Repeat("x", 32768)}); err != nil {
			t.Errorf("32768-char string: %v", err)
		}
		wantErr(t, add(map[string]any{"PartitionKey": "p", "RowKey": "n", "1abc": 1}), 400, "PropertyNameInvalid")
		wantErr(t, add(map[string]any{"PartitionKey": "p", "RowKey": "n", "\u200dabc": 1}), 400, "PropertyNameInvalid") // a format character, not first
		// C# identifiers: a letter number (Nl) may start a name, a
		// formatting character (Cf) stand after the first (both refused
		// before).
		if err := add(map[string]any{"PartitionKey": "p", "RowKey": "nl", "\u216bx": 1, "a\u200db": 2}); err != nil {
			t.Errorf("names with U+216B first and U+200D inside: %v", err)
		}
		wantErr(t, add(map[string]any{"PartitionKey": "p", "RowKey": "n", strings.Repeat("n", 256): 1}), 400, "PropertyNameTooLong")
		many := map[string]any{"PartitionKey": "p", "RowKey": "many"}
		for i := 0; i < 253; i++ {
			many[fmt.Sprintf("P%d", i)] = i
		}
		wantErr(t, add(many), 400, "TooManyProperties")
		delete(many, "P252")
		if err := add(many); err != nil {
			t.Errorf("252 properties: %v", err)
		}
		// 1 MiB: 16 strings of 32K UTF-16 units = 16 * (8 + 2*3 + 4 + 65536) bytes > 1 MiB.
		big := map[string]any{"PartitionKey": "p", "RowKey": "big"}
		for i := 0; i < 16; i++ {
			big[fmt.Sprintf("S%02d", i)] = strings.Repeat("y", 32768)
		}
		wantErr(t, add(big), 400, "EntityTooLarge")
		delete(big, "S15")
		if err := add(big); err != nil {
			t.Errorf("15 x 64 KiB strings: %v", err)
		}
		wantErr(t, add(map[string]any{"PartitionKey": "p", "RowKey": "dt", "D@odata.type": "Edm.DateTime", "D": "1600-12-31T23:59:59Z"}), 400, "OutOfRangeInput")
		wantErr(t, add(map[string]any{"PartitionKey": "p", "RowKey": "i", "I@odata.type": "Edm.Int32", "I": "2147483648"}), 400, "InvalidInput")
		wantErr(t, add(map[string]any{"PartitionKey": "p", "RowKey": "o", "O": map[string]any{"x": 1}}), 400, "InvalidInput")
		// Nothing invalid was written.
		pager := c.NewListEntitiesPager(nil)
		n := 0
		for pager.More() {
			p, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n += len(p.Entities)
		}
		if n != 5 {
			t.Errorf("table holds %d entities, want 5 (the valid ones)", n)
		}
	})
}

// rawGet sends a signed GET and returns the body (for checking exact bytes
// that the SDK would re-marshal).
func rawGet(t *testing.T, s *Server, path string) string {
	t.Helper()
	status, _, body := rawDo(t, s, "GET", path, "", nil)
	if status != 200 {
		t.Fatalf("GET %s: %d %s", path, status, body)
	}
	return body
}

// rawDo sends a signed request with an optional body and headers.
func rawDo(t *testing.T, s *Server, method, path, body string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	raw, _, _ := strings.Cut(path, "?")
	signLite(req, raw)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestHeterogeneousEntities: the design guide's pattern of several entity
// types in one partition, told apart by a type property or a RowKey
// prefix, updated together in one transaction.
func TestHeterogeneousEntities(t *testing.T) {
	s := StartServer(t, "")
	c := newTable(t, serviceClient(t, s))
	type employee struct {
		aztables.Entity
		EntityType, FirstName, LastName string
		Age                             int32
	}
	type department struct {
		aztables.Entity
		EntityType, DepartmentName string
		EmployeeCount              int32
	}
	acts := []aztables.TransactionAction{
		{ActionType: aztables.TransactionTypeAdd, Entity: mustJSON(t, department{Entity: aztables.Entity{PartitionKey: "Sales", RowKey: "Department"}, EntityType: "Department", DepartmentName: "Sales", EmployeeCount: 2})},
		{ActionType: aztables.TransactionTypeAdd, Entity: mustJSON(t, employee{Entity: aztables.Entity{PartitionKey: "Sales", RowKey: "Employee_000001"}, EntityType: "Employee", FirstName: "Ken", LastName: "Kwok", Age: 23})},
		{ActionType: aztables.TransactionTypeAdd, Entity: mustJSON(t, employee{Entity: aztables.Entity{PartitionKey: "Sales", RowKey: "Employee_000002"}, EntityType: "Employee", FirstName: "Ann", LastName: "Lee", Age: 41})},
	}
	if _, err := c.SubmitTransaction(ctx, acts, nil); err != nil {
		t.Fatal(err)
	}
	// By type property.
	rows, _ := listAll(t, c, &aztables.ListEntitiesOptions{Filter: ptr("PartitionKey eq 'Sales' and EntityType eq 'Employee'")})
	if len(rows) != 2 || rows[0].Props["FirstName"] != "Ken" || rows[1].Props["LastName"] != "Lee" {
		t.Errorf("employees = %v", rows)
	}
	// By RowKey prefix: a range query.
	rows, _ = listAll(t, c, &aztables.ListEntitiesOptions{Filter: ptr("PartitionKey eq 'Sales' and RowKey ge 'Employee_' and RowKey lt 'Employee`'")})
	if len(rows) != 2 {
		t.Errorf("employees by prefix = %v", rows)
	}
	// Each entity comes back with its own shape.
	r, err := c.GetEntity(ctx, "Sales", "Department", nil)
	if err != nil {
		t.Fatal(err)
	}
	var d department
	if err := json.Unmarshal(r.Value, &d); err != nil || d.EmployeeCount != 2 || d.DepartmentName != "Sales" {
		t.Errorf("department = %+v, %v", d, err)
	}
	if _, ok := rawProps(t, r.Value)["FirstName"]; ok {
		t.Errorf("department has employee properties: %s", r.Value)
	}
}

func rawProps(t *testing.T, raw []byte) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
