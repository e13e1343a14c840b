package tablestore_test

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/kv/pebblekv"
	"github.com/partita/partita/internal/settings"
	"github.com/partita/partita/internal/tablestore"
)

var writeFixture = flag.Bool("upgrade.write", false, "TestWriteUpgradeFixture: (re)write testdata/upgrade/v1 instead of a temporary directory")

// Upgrade fixtures: testdata/upgrade/vN is a data directory written by the
// release whose store version is N (pebblekv.StoreVersion), from the
// contents fixtureV1 describes. A release keeps every earlier directory
// and its description, and adds its own when the store version changes:
// TestUpgrade opens a copy of each with the current code and reads back
// every table, entity, stored access policy and service property.

// fixture is what an upgrade fixture holds.
type fixture struct {
	accounts   map[string][]fixtureTable
	properties map[string]settings.ServiceProperties
}

type fixtureTable struct {
	name     string
	entities []partita.Entity // Timestamp: the fixture clock's tick of the write
	acl      []settings.SignedIdentifier
}

// fixtureEpoch is the clock of the fixture's writes, so that their
// Timestamps (the ETags clients hold) are known.
var fixtureEpoch = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func mustGuid(s string) edm.Value {
	v, err := edm.GuidValue(s)
	if err != nil {
		panic(err)
	}
	return v
}

// fixtureV1 is the content of testdata/upgrade/v1. Do not change it: the
// directory was written from it.
func fixtureV1() fixture {
	days := func(n int) *int { return &n }
	yes := true
	every := []partita.Property{
		{Name: "AString", Value: edm.StringValue("naïve ☃ 'quoted' \"double\"")},
		{Name: "AnInt32", Value: edm.Int32Value(-2147483648)},
		{Name: "AnInt64", Value: edm.Int64Value(9223372036854775807)},
		{Name: "ADouble", Value: edm.DoubleValue(-2.5e-300)},
		{Name: "AnInfinity", Value: edm.DoubleValue(math.Inf(1))},
		{Name: "ANaN", Value: edm.DoubleValue(math.NaN())},
		{Name: "ATrue", Value: edm.BoolValue(true)},
		{Name: "AFalse", Value: edm.BoolValue(false)},
		{Name: "ADateTime", Value: edm.DateTimeValue(edm.TicksFromTime(time.Date(1601, 1, 1, 0, 0, 0, 100, time.UTC)))},
		{Name: "ALateDateTime", Value: edm.DateTimeValue(edm.TicksFromTime(time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC)))},
		{Name: "AGuid", Value: mustGuid("c9da6455-213d-42c9-9a79-3e9149a57833")},
		{Name: "ABinary", Value: edm.BinaryValue([]byte{0, 1, 2, 0xfe, 0xff})},
		{Name: "AnEmptyString", Value: edm.StringValue("")},
		{Name: "AnEmptyBinary", Value: edm.BinaryValue([]byte{})},
	}
	var customers []partita.Entity
	customers = append(customers,
		partita.Entity{PartitionKey: "", RowKey: "", Properties: []partita.Property{{Name: "Empty", Value: edm.BoolValue(true)}}},
		partita.Entity{PartitionKey: "every type", RowKey: "1", Properties: every},
		partita.Entity{PartitionKey: "ünïcode ☃", RowKey: "𝄞 clef", Properties: []partita.Property{{Name: "Name", Value: edm.StringValue("Clef")}}},
		partita.Entity{PartitionKey: "no properties", RowKey: "x"},
	)
	// Enough ~1 KiB entities that the memtable is flushed: the directory
	// holds sstables and blob files, not only a write-ahead log.
	for i := range 250 {
		customers = append(customers, partita.Entity{
			PartitionKey: fmt.Sprintf("p%02d", i%7), RowKey: fmt.Sprintf("r%04d", i),
			Properties: []partita.Property{
				{Name: "N", Value: edm.Int32Value(int32(i))},
				{Name: "Payload", Value: edm.StringValue(string(bytes.Repeat([]byte{byte('a' + i%26)}, 1000)))},
			},
		})
	}
	return fixture{
		accounts: map[string][]fixtureTable{
			"devstoreaccount1": {
				{name: "Customers", entities: customers, acl: []settings.SignedIdentifier{
					{ID: "readers", Policy: &settings.AccessPolicy{Start: "2026-01-01T00:00:00.0000000Z", Expiry: "2036-01-01T00:00:00.0000000Z", Permission: "r"}},
					{ID: "writers", Policy: &settings.AccessPolicy{Expiry: "2030-06-30T12:00:00.0000000Z", Permission: "raud"}},
					{ID: "nopolicy"},
				}},
				{name: "EmptyTable"},
			},
			"second": {
				{name: "Orders2026", entities: []partita.Entity{
					{PartitionKey: "2026-11", RowKey: "0001", Properties: []partita.Property{{Name: "Total", Value: edm.DoubleValue(12.75)}}},
				}},
			},
		},
		properties: map[string]settings.ServiceProperties{
			"devstoreaccount1": {
				Logging:       &settings.Logging{Version: "1.0", Read: true, Write: true, Retention: settings.RetentionPolicy{Enabled: true, Days: days(7)}},
				HourMetrics:   &settings.Metrics{Version: "1.0", Enabled: true, IncludeAPIs: &yes, Retention: settings.RetentionPolicy{Enabled: true, Days: days(30)}},
				MinuteMetrics: &settings.Metrics{Version: "1.0"},
				Cors:          []settings.CorsRule{{AllowedOrigins: "https://example.com", AllowedMethods: "GET,PUT", AllowedHeaders: "x-ms-*", ExposedHeaders: "x-ms-request-id", MaxAgeInSeconds: 600}},
			},
		},
	}
}

// fixtureClock returns the Now of the fixture's writes: it stands still,
// so the store hands out Timestamps one tick apart (Store.tick), which
// timestamped predicts.
func fixtureClock() func() time.Time {
	return func() time.Time { return fixtureEpoch }
}

// writeFixtureDir writes f into a new data directory dir, in a fixed
// order, and returns f with each entity's Timestamp.
func writeFixtureDir(t *testing.T, dir string, f fixture) fixture {
	t.Helper()
	// SeparateValues: the release of store version 1 kept values of 256
	// bytes or more in blob files until 2026-11-27, and so does v1.
	db, err := pebblekv.Open(dir, &pebblekv.Options{MinFreeBytes: -1, MemTableSize: 128 << 10, SeparateValues: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s, err := tablestore.Open(ctx, db, tablestore.Options{Now: fixtureClock()})
	if err != nil {
		t.Fatal(err)
	}
	for _, account := range sortedKeys(f.accounts) {
		for ti := range f.accounts[account] {
			ft := &f.accounts[account][ti]
			if _, err := s.CreateTable(ctx, account, ft.name); err != nil {
				t.Fatal(err)
			}
			for ei := range ft.entities {
				e := ft.entities[ei]
				e.Properties = append([]partita.Property(nil), e.Properties...)
				res, err := s.Write(ctx, account, ft.name, partita.Op{Kind: partita.OpInsert, Entity: &e})
				if err != nil {
					t.Fatalf("insert %s/%s: %v", e.PartitionKey, e.RowKey, err)
				}
				ft.entities[ei].Timestamp = res.Timestamp
			}
			if ft.acl != nil {
				if err := s.SetTableACL(ctx, account, ft.name, settings.MarshalACL(ft.acl)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, account := range sortedKeys(f.properties) {
		raw, err := f.properties[account].MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SetServiceProperties(ctx, account, raw); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return f
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if ks[j] < ks[i] {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	return ks
}

// timestamped returns f with the Timestamps its entities get in
// writeFixtureDir: the fixture epoch plus one tick per entity written
// before, in writeFixtureDir's order.
func timestamped(t *testing.T, f fixture) fixture {
	t.Helper()
	ts := edm.TicksFromTime(fixtureEpoch)
	for _, account := range sortedKeys(f.accounts) {
		for ti := range f.accounts[account] {
			ft := &f.accounts[account][ti]
			for ei := range ft.entities {
				ft.entities[ei].Timestamp = ts
				ts++
			}
		}
	}
	return f
}

// checkFixture reads back every table, entity, ACL and service property of
// f from the data directory dir.
func checkFixture(t *testing.T, dir string, f fixture) {
	t.Helper()
	db, err := pebblekv.Open(dir, &pebblekv.Options{MinFreeBytes: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := tablestore.Open(ctx, db, tablestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for account, tables := range f.accounts {
		page, err := s.QueryTables(ctx, account, partita.TableQuery{})
		if err != nil {
			t.Fatal(err)
		}
		var names, want []string
		for _, tb := range page.Tables {
			names = append(names, tb.Name)
		}
		for _, ft := range tables {
			want = append(want, ft.name)
		}
		if fmt.Sprint(sortedKeys(setOf(names))) != fmt.Sprint(sortedKeys(setOf(want))) {
			t.Errorf("%s: tables %q, want %q", account, names, want)
		}
		for _, ft := range tables {
			var got []partita.Entity
			var next *partita.Key
			for {
				info, err := s.QueryEntities(ctx, account, ft.name, partita.Query{Next: next}, func(e *partita.Entity) error {
					c := *e // valid only during the call
					c.Properties = nil
					for _, p := range e.Properties {
						p.Value.Bin = bytes.Clone(p.Value.Bin)
						c.Properties = append(c.Properties, p)
					}
					got = append(got, c)
					return nil
				})
				if err != nil {
					t.Fatalf("%s/%s: query: %v", account, ft.name, err)
				}
				if next = info.Next; next == nil {
					break
				}
			}
			wantByKey := map[partita.Key]partita.Entity{}
			for _, e := range ft.entities {
				wantByKey[e.Key()] = e
			}
			if len(got) != len(ft.entities) {
				t.Errorf("%s/%s: %d entities, want %d", account, ft.name, len(got), len(ft.entities))
			}
			for _, g := range got {
				w, ok := wantByKey[g.Key()]
				if !ok {
					t.Errorf("%s/%s: unexpected entity %q/%q", account, ft.name, g.PartitionKey, g.RowKey)
					continue
				}
				if !sameEntity(g, w) {
					t.Errorf("%s/%s: entity %q/%q = %+v, want %+v", account, ft.name, g.PartitionKey, g.RowKey, brief(g), brief(w))
				}
				if p, err := s.GetEntity(ctx, account, ft.name, g.Key()); err != nil || !sameEntity(*p, w) {
					t.Errorf("%s/%s: GetEntity(%q/%q) = %v", account, ft.name, g.PartitionKey, g.RowKey, err)
				}
			}
			raw, err := s.GetTableACL(ctx, account, ft.name)
			if err != nil {
				t.Fatal(err)
			}
			acl, err := settings.UnmarshalACL(raw)
			if err != nil || !reflect.DeepEqual(acl, ft.acl) {
				t.Errorf("%s/%s: ACL %+v (%v), want %+v", account, ft.name, acl, err, ft.acl)
			}
		}
	}
	for account, want := range f.properties {
		raw, err := s.GetServiceProperties(ctx, account)
		if err != nil {
			t.Fatal(err)
		}
		var got settings.ServiceProperties
		if err := got.UnmarshalBinary(raw); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: service properties %+v (%v), want %+v", account, got, err, want)
		}
	}
}

func setOf(xs []string) map[string]bool {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// sameEntity compares keys, Timestamp and properties in order, doubles by
// their bits (NaN included).
func sameEntity(a, b partita.Entity) bool {
	if a.Key() != b.Key() || a.Timestamp != b.Timestamp || len(a.Properties) != len(b.Properties) {
		return false
	}
	for i, p := range a.Properties {
		q := b.Properties[i]
		if p.Name != q.Name || p.Value.Type != q.Value.Type || p.Value.Str != q.Value.Str || p.Value.Int != q.Value.Int ||
			math.Float64bits(p.Value.Float) != math.Float64bits(q.Value.Float) || !bytes.Equal(p.Value.Bin, q.Value.Bin) {
			return false
		}
	}
	return true
}

// brief shortens long strings for messages.
func brief(e partita.Entity) partita.Entity {
	e.Properties = append([]partita.Property(nil), e.Properties...)
	for i, p := range e.Properties {
		if len(p.Value.Str) > 40 {
			e.Properties[i].Value.Str = p.Value.Str[:40] + "…"
		}
	}
	return e
}

// TestWriteUpgradeFixture writes fixtureV1 with the current code and reads
// it back. With -upgrade.write it writes testdata/upgrade/v1 itself (only
// the release that introduces a store version does that):
//
//	go test ./internal/tablestore -run TestWriteUpgradeFixture -args -upgrade.write
func TestWriteUpgradeFixture(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "v1")
	if *writeFixture {
		if pebblekv.StoreVersion != 1 {
			t.Fatalf("this release writes store version %d; add a fixture for it instead of rewriting v1", pebblekv.StoreVersion)
		}
		dir = filepath.Join("testdata", "upgrade", "v1")
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	f := writeFixtureDir(t, dir, fixtureV1())
	predicted := timestamped(t, fixtureV1())
	for account, tables := range f.accounts {
		for ti, ft := range tables {
			for ei, e := range ft.entities {
				if want := predicted.accounts[account][ti].entities[ei].Timestamp; e.Timestamp != want {
					t.Fatalf("%s/%s %q/%q: Timestamp %d, want %d (the fixture clock's)", account, ft.name, e.PartitionKey, e.RowKey, e.Timestamp, want)
				}
			}
		}
	}
	blobs, _ := filepath.Glob(filepath.Join(dir, "*.blob"))
	ssts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(blobs) == 0 || len(ssts) == 0 {
		t.Errorf("the fixture has %d sstables and %d blob files, want some of each", len(ssts), len(blobs))
	}
	// Read a copy: opening replays and flushes the write-ahead log, which
	// the fixture keeps as it was written.
	cp := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(cp, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	checkFixture(t, cp, f)
}

// TestUpgrade opens a copy of each committed fixture with the current code
// and reads back everything it holds.
func TestUpgrade(t *testing.T) {
	for version, f := range map[string]fixture{"v1": fixtureV1()} {
		t.Run(version, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), version)
			if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "upgrade", version))); err != nil {
				t.Fatal(err)
			}
			checkFixture(t, dir, timestamped(t, f))
		})
	}
}
