package tablestore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/kv"
)

// Probe reads the catalog's next table id and writes the probe record, so
// it succeeds only when the store answers a real read and a durable write
// (a readiness check).
func (s *Store) Probe(ctx context.Context) error {
	if err := s.db.View(ctx, func(r kv.Reader) error {
		_, err := r.Get(nextIDKey)
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		}
		return err
	}); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if err := s.update(ctx, func(tx kv.Txn) error {
		ticks, err := s.tick(0)
		if err != nil {
			return err
		}
		return tx.Set(probeKey, binary.AppendUvarint(nil, uint64(ticks)))
	}); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// CheckOptions are the decoders of the values that tablestore keeps opaque.
type CheckOptions struct {
	// DecodeACL and DecodeProperties, when set, must accept every stored
	// table ACL and every stored set of service properties.
	DecodeACL        func([]byte) error
	DecodeProperties func([]byte) error
	// MaxProblems bounds the problems listed in the report (default 100);
	// Problems counts them all.
	MaxProblems int
}

// CheckReport is what Check found.
type CheckReport struct {
	Tables     []TableSummary // in key order: by account, then lowercase name
	Entities   int64          // in every table, live or being deleted
	ACLs       int            // tables with stored access policies
	Properties int            // accounts with stored service properties
	NextID     uint64         // the next table id (0: none recorded)
	Problems   int            // inconsistencies found
	Details    []string       // the first MaxProblems of them
}

// TableSummary is one catalog entry and what belongs to it.
type TableSummary struct {
	Account, Name string
	ID            uint64
	Deleting      bool // dropped, its purge not finished
	Entities      int64
	ACL           bool
}

// OK reports whether the store is consistent.
func (r *CheckReport) OK() bool { return r.Problems == 0 }

func (r *CheckReport) problem(max int, format string, args ...any) {
	r.Problems++
	if len(r.Details) < max {
		r.Details = append(r.Details, fmt.Sprintf(format, args...))
	}
}

// Check reads every key of db, which no one may be writing (a stopped
// server's store, opened read-only), and checks it against the key
// layout: every key is in a known namespace and decodes, every catalog
// entry decodes with a valid table name and an id of its own below the
// next id, every entity's key and value decode and its table id is in the
// catalog, every ACL belongs to a table in the catalog and decodes, every
// set of service properties decodes, no entity's Timestamp is above the
// tick ceiling (ticks.go) when there is one. A table that is being deleted may
// still have entities and an ACL (its purge resumes when the server
// starts). The error is for failures to read, not for inconsistencies,
// which are in the report.
func Check(ctx context.Context, db kv.DB, o CheckOptions) (*CheckReport, error) {
	if o.MaxProblems <= 0 {
		o.MaxProblems = 100
	}
	rep := &CheckReport{}
	var ceiling int64        // the tick ceiling (0: none); its key sorts before every entity's
	byID := map[uint64]int{} // table id → index in rep.Tables; as many as the catalog has
	var e partita.Entity
	err := db.View(ctx, func(r kv.Reader) error {
		it, err := r.NewIter(kv.IterOptions{})
		if err != nil {
			return err
		}
		defer it.Close()
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			if n++; n%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			k, v := it.Key(), it.Value()
			if len(k) == 0 {
				rep.problem(o.MaxProblems, "an empty key")
				continue
			}
			switch k[0] {
			case nsCatalog:
				t, err := decodeCatalogEntry(k, v)
				if err != nil {
					rep.problem(o.MaxProblems, "catalog key %q: %v", k, err)
					continue
				}
				lower := string(k[2+len(t.account):])
				switch {
				case ValidateTableName(t.name) != nil:
					rep.problem(o.MaxProblems, "catalog key %q: invalid table name %q", k, t.name)
				case partita.FoldTableName(t.name) != lower:
					rep.problem(o.MaxProblems, "catalog key %q: table name %q does not match its key", k, t.name)
				case t.state != stateActive && t.state != stateDeleting:
					rep.problem(o.MaxProblems, "catalog key %q: unknown state %d", k, t.state)
				case len(v) != 10+len(t.name):
					rep.problem(o.MaxProblems, "catalog key %q: malformed record", k)
				}
				if i, dup := byID[t.id]; dup {
					rep.problem(o.MaxProblems, "tables %s/%s and %s/%s share the id %d", rep.Tables[i].Account, rep.Tables[i].Name, t.account, t.name, t.id)
					continue
				}
				byID[t.id] = len(rep.Tables)
				rep.Tables = append(rep.Tables, TableSummary{Account: t.account, Name: t.name, ID: t.id, Deleting: t.state == stateDeleting})
			case nsMeta:
				switch {
				case bytes.Equal(k, nextIDKey):
					id, n := binary.Uvarint(v)
					if n <= 0 || n != len(v) {
						rep.problem(o.MaxProblems, "next table id: malformed value %q", v)
						continue
					}
					rep.NextID = id
				case bytes.Equal(k, probeKey):
					if _, n := binary.Uvarint(v); n <= 0 || n != len(v) {
						rep.problem(o.MaxProblems, "readiness probe record: malformed value %q", v)
					}
				case bytes.Equal(k, ceilingKey):
					c, n := binary.Uvarint(v)
					if n <= 0 || n != len(v) || c > math.MaxInt64 {
						rep.problem(o.MaxProblems, "tick ceiling: malformed value %q", v)
						continue
					}
					ceiling = int64(c)
				default:
					rep.problem(o.MaxProblems, "unknown key %q", k)
				}
			case nsEntities:
				pk, rk, err := decodeEntityKey(k)
				id := uint64(0)
				if len(k) >= 9 {
					id = binary.BigEndian.Uint64(k[1:9])
				}
				if err != nil {
					rep.problem(o.MaxProblems, "entity key %q: %v", k, err)
				} else if !utf8.ValidString(pk) || !utf8.ValidString(rk) {
					rep.problem(o.MaxProblems, "entity key %q: keys are not valid UTF-8", k)
				}
				i, ok := byID[id]
				if !ok {
					rep.problem(o.MaxProblems, "entity key %q: table id %d is not in the catalog", k, id)
				} else {
					rep.Tables[i].Entities++
				}
				rep.Entities++
				if err := decodeEntityInto(v, &e, true); err != nil {
					rep.problem(o.MaxProblems, "entity key %q: value: %v", k, err)
				} else if ceiling != 0 && e.Timestamp > ceiling {
					rep.problem(o.MaxProblems, "entity key %q: Timestamp %d above the tick ceiling %d", k, e.Timestamp, ceiling)
				}
			case nsACL:
				if len(k) != 9 {
					rep.problem(o.MaxProblems, "ACL key %q: malformed", k)
					continue
				}
				id := binary.BigEndian.Uint64(k[1:])
				i, ok := byID[id]
				if !ok {
					rep.problem(o.MaxProblems, "ACL of table id %d, which is not in the catalog", id)
				} else {
					rep.Tables[i].ACL = true
				}
				rep.ACLs++
				if o.DecodeACL != nil {
					if err := o.DecodeACL(v); err != nil {
						rep.problem(o.MaxProblems, "ACL of table id %d: %v", id, err)
					}
				}
			case nsProperties:
				rep.Properties++
				if len(k) < 2 {
					rep.problem(o.MaxProblems, "service properties key %q: no account", k)
				}
				if o.DecodeProperties != nil {
					if err := o.DecodeProperties(v); err != nil {
						rep.problem(o.MaxProblems, "service properties of account %q: %v", k[1:], err)
					}
				}
			default:
				rep.problem(o.MaxProblems, "unknown key %q", k)
			}
		}
		return it.Error()
	})
	if err != nil {
		return nil, fmt.Errorf("tablestore: check: %w", err)
	}
	for _, t := range rep.Tables {
		if t.ID >= rep.NextID {
			rep.problem(o.MaxProblems, "table %s/%s has id %d, not below the next table id %d", t.Account, t.Name, t.ID, rep.NextID)
		}
	}
	return rep, nil
}
