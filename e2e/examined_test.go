package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
)

// TestQueryEntitiesExamined: a query response says how many entities its
// page examined (x-partita-entities-examined), beside its query class;
// the console shows both.
func TestQueryEntitiesExamined(t *testing.T) {
	s := StartServer(t, "")
	svc := serviceClient(t, s)
	c := newTable(t, svc)
	ctx := context.Background()
	for _, k := range [][2]string{{"p", "1"}, {"p", "2"}, {"p", "3"}, {"q", "1"}, {"q", "2"}} {
		if _, err := c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": k[0], "RowKey": k[1], "N": k[1]}), nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		query, class string
		examined     int
		returned     int
	}{
		{"$filter=" + escape("PartitionKey eq 'p' and RowKey eq '2'"), "point", 1, 1},
		{"$filter=" + escape("PartitionKey eq 'p' and N eq '3'"), "partition", 3, 1},
		{"$filter=" + escape("N eq '1'"), "table", 5, 2},
		{"$filter=" + escape("PartitionKey eq 'p'") + "&$top=2", "partition", 2, 2},
	} {
		st, h, body := rawDo(t, s, "GET", "/"+devAccount+"/"+tableName(c)+"()?"+tt.query, "", nil)
		if st != 200 {
			t.Fatalf("%s: %d %s", tt.query, st, body)
		}
		if got := h.Get("x-partita-query-class"); got != tt.class {
			t.Errorf("%s: class %q, want %q", tt.query, got, tt.class)
		}
		if got := h.Get("x-partita-entities-examined"); got != strconv.Itoa(tt.examined) {
			t.Errorf("%s: examined %q, want %d", tt.query, got, tt.examined)
		}
		if got := len(values(t, body)); got != tt.returned {
			t.Errorf("%s: returned %d, want %d", tt.query, got, tt.returned)
		}
	}
}

func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, " ", "%20"), "'", "%27")
}
