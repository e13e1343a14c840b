package metrics

import (
	"testing"
	"time"
)

// TestObserveFoldsUnknownLabels checks that every label value outside its
// fixed set is counted as "other", and that the success fast path and the
// labelled path count into the same series.
func TestObserveFoldsUnknownLabels(t *testing.T) {
	m := New([]string{"a1"}, []string{"ResourceNotFound"})
	for _, r := range []Request{
		{Account: "a1", Operation: "GetEntity", Status: 200},
		{Account: "a1", Operation: "GetEntity", Status: 200},
		{Account: "zz", Operation: "NoSuchOp", Status: 299, Code: "MadeUpCode"},
		{Account: "yy", Operation: "AnotherOp", Status: 298, Code: "OtherMadeUp"},
		{Account: "a1", Operation: "GetEntity", Status: 404, Code: "ResourceNotFound", Duration: time.Millisecond},
		{Account: "qq", Operation: "GetEntity", Status: 204},
	} {
		m.Observe(&r)
	}
	want := map[[4]string]float64{
		{"a1", "GetEntity", "200", ""}:                 2,
		{"other", "other", "other", "other"}:           2,
		{"a1", "GetEntity", "404", "ResourceNotFound"}: 1,
		{"other", "GetEntity", "204", ""}:              1,
	}
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[[4]string]float64{}
	for _, f := range fams {
		if f.GetName() != "partita_requests_total" {
			continue
		}
		for _, s := range f.Metric {
			l := map[string]string{}
			for _, p := range s.Label {
				l[p.GetName()] = p.GetValue()
			}
			got[[4]string{l["account"], l["operation"], l["status"], l["code"]}] = s.GetCounter().GetValue()
		}
	}
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%v = %v, want %v", k, got[k], v)
		}
	}
}
