package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// TestAdminObservability drives the real binary with the Go SDK and reads
// what its admin listener reports: /metrics counts exactly the requests
// sent (by account, operation and status) and the query classes they ran
// as, /advisor flags the hot partition of a table that takes every write in
// one partition, and `partita advise` prints that finding.
func TestAdminObservability(t *testing.T) {
	s := StartServer(t, "")
	if s.AdminURL == "" {
		t.Fatal("the server printed no admin listener")
	}
	ctx := context.Background()
	svc := serviceClient(t, s)
	if _, err := svc.CreateTable(ctx, "observed", nil); err != nil {
		t.Fatal(err)
	}
	tc := svc.NewClient("observed")
	const inserts = 1200 // above the advisor's 1000 writes in its window
	for i := range inserts {
		e := aztables.EDMEntity{Entity: aztables.Entity{PartitionKey: "hot", RowKey: fmt.Sprintf("%06d", i)}}
		b, _ := json.Marshal(e)
		if _, err := tc.AddEntity(ctx, b, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tc.GetEntity(ctx, "hot", "000001", nil); err != nil {
		t.Fatal(err)
	}
	pager := tc.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: ptr("PartitionKey eq 'hot' and RowKey lt '000010'")})
	for pager.More() {
		if _, err := pager.NextPage(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tc.GetEntity(ctx, "hot", "missing", nil); err == nil {
		t.Fatal("a missing entity was found")
	}

	body := adminOK(t, s.AdminURL+"/metrics")
	// Exact counts: the label sets come from fixed lists, and the values
	// are what this test sent.
	wantSum := func(metric string, labels []string, want float64) {
		t.Helper()
		var sum float64
		re := regexp.MustCompile(`^` + metric + `\{([^}]*)\} (\S+)$`)
	lines:
		for _, line := range strings.Split(body, "\n") {
			m := re.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			for _, l := range labels {
				if !strings.Contains(m[1], l) {
					continue lines
				}
			}
			v, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			sum += v
		}
		if sum != want {
			t.Errorf("%s%v = %v, want %v", metric, labels, sum, want)
		}
	}
	wantSum("partita_requests_total", []string{`account="devstoreaccount1"`, `status="201"`}, inserts+1) // the table and the inserts
	wantSum("partita_requests_total", []string{`account="devstoreaccount1"`, `status="404"`, `code="ResourceNotFound"`}, 1)
	wantSum("partita_queries_total", []string{`class="range"`}, 1)
	if strings.Contains(body, `"hot"`) || strings.Contains(body, `observed`) {
		t.Error("a PartitionKey or table name became a label")
	}

	var report struct {
		Findings []struct {
			Kind, Table, Pattern string
		}
	}
	if err := json.Unmarshal([]byte(adminOK(t, s.AdminURL+"/advisor")), &report); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range report.Findings {
		found = found || (f.Table == "observed" && strings.Contains(strings.ToLower(f.Kind), "hot"))
	}
	if !found {
		t.Errorf("no hot-partition finding for table observed: %+v", report.Findings)
	}

	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, partitaBin, "advise", "--admin", s.AdminURL).CombinedOutput()
	if err != nil {
		t.Fatalf("partita advise: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "observed") {
		t.Errorf("partita advise does not name the table:\n%s", out)
	}
}

// adminOK is adminGet's body, failing the test unless the status is 200.
func adminOK(t *testing.T, url string) string {
	t.Helper()
	code, body := adminGet(t, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", url, code, body)
	}
	return body
}
