package tablestore

import (
	"encoding/binary"
	"errors"

	"github.com/partita/partita"
	"github.com/partita/partita/odata"
)

// # Key layout
//
// This file declares every key partita stores. Each key starts with a
// one-byte namespace; the namespaces are disjoint and nothing else writes
// to the store:
//
//	0x01 catalog:    0x01 | account | 0x00 | lowercase table name → table record
//	0x02 meta:       0x02 | "nextid"                                → next table id (uvarint)
//	                 0x02 | "probe"                                 → last readiness probe (uvarint ticks)
//	                 0x02 | "ticks"                                 → Timestamp ceiling (uvarint ticks; embedded store; ticks.go)
//	0x03 entities:   0x03 | table id (8 bytes, big-endian) | str(PartitionKey) | str(RowKey) → entity value
//	0x04 ACL:        0x04 | table id (8 bytes, big-endian)          → stored access policies
//	0x05 properties: 0x05 | account                                 → service properties
//
// The values:
//
//   - table record (encodeTableRecord): version (1 byte, = 1) | state (1
//     byte: 0 active, 1 being deleted) | table id (8 bytes, big-endian) |
//     table name as created.
//   - next id: the id the next created table gets, as a uvarint; absent
//     means 1.
//   - entity value: see codec.go (version, Timestamp, properties).
//   - ACL and service properties: opaque here, the HTTP layer's settings
//     encoding (internal/settings).
//
// In a catalog key the first 0x00 ends the account name, so an account's
// tables are one key range (catalogPrefix) in name order. Table ids are never
// shared by two live tables, so dropping a table is a catalog change plus
// one range deletion of its id prefix (and the deletion of its ACL key: a
// re-created table starts with no policies). Check walks the whole layout.
//
// str(s) is an order-preserving, prefix-free encoding of a string: the
// UTF-8 bytes of s, with 0x00 written as 0x00 0xFF, the lead bytes 0xEE and
// 0xEF (U+E000 to U+FFFF) written as 0xF5 and 0xF6, and a terminator 0x00
// 0x01. The terminator makes "a" sort before "a\x00" and "aa"; the lead-byte
// remapping makes byte order equal the service's UTF-16 ordinal order,
// which puts supplementary characters (lead bytes 0xF0 to 0xF4) before
// U+E000 to U+FFFF. Bytes 0xF5 and 0xF6 never occur in valid UTF-8, so the
// mapping is reversible for every valid key.
const (
	nsCatalog    = 0x01
	nsMeta       = 0x02
	nsEntities   = 0x03
	nsACL        = 0x04
	nsProperties = 0x05
)

// nextIDKey holds the next table id.
var nextIDKey = []byte{nsMeta, 'n', 'e', 'x', 't', 'i', 'd'}

// probeKey is written by Probe: a synced write that touches no table.
var probeKey = []byte{nsMeta, 'p', 'r', 'o', 'b', 'e'}

// ceilingKey holds the tick ceiling (ticks.go): no Timestamp stored or
// seen passes it, and a restart counts from it, whatever the clock.
var ceilingKey = []byte{nsMeta, 't', 'i', 'c', 'k', 's'}

var errBadKey = errors.New("tablestore: malformed entity key")

func catalogPrefix(account string) []byte {
	b := make([]byte, 0, 2+len(account))
	b = append(b, nsCatalog)
	b = append(b, account...)
	return append(b, 0x00)
}

// catalogKey is the key of a table's catalog record: its name folded as
// the service compares table names (partita.FoldTableName).
func catalogKey(account, name string) []byte {
	return append(catalogPrefix(account), partita.FoldTableName(name)...)
}

func tablePrefix(id uint64) []byte {
	b := make([]byte, 9, 9+64)
	b[0] = nsEntities
	binary.BigEndian.PutUint64(b[1:], id)
	return b
}

// aclKey is the key of a table's stored access policies.
func aclKey(id uint64) []byte {
	k := tablePrefix(id)
	k[0] = nsACL
	return k
}

// propertiesKey is the key of an account's service properties.
func propertiesKey(account string) []byte { return append([]byte{nsProperties}, account...) }

// appendStr appends str(s).
func appendStr(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case 0x00:
			b = append(b, 0x00, 0xFF)
		case 0xEE:
			b = append(b, 0xF5)
		case 0xEF:
			b = append(b, 0xF6)
		default:
			b = append(b, c)
		}
	}
	return append(b, 0x00, 0x01)
}

// readStr decodes one str() from b and returns it and the rest of b.
func readStr(b []byte) (string, []byte, error) {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case 0x00:
			if i+1 >= len(b) {
				return "", nil, errBadKey
			}
			switch b[i+1] {
			case 0x01:
				return string(out), b[i+2:], nil
			case 0xFF:
				out = append(out, 0x00)
				i++
			default:
				return "", nil, errBadKey
			}
		case 0xF5:
			out = append(out, 0xEE)
		case 0xF6:
			out = append(out, 0xEF)
		default:
			out = append(out, c)
		}
	}
	return "", nil, errBadKey
}

// entityKey appends the key of (pk, rk) in table id to b.
func entityKey(b []byte, id uint64, pk, rk string) []byte {
	b = append(b, nsEntities)
	b = binary.BigEndian.AppendUint64(b, id)
	b = appendStr(b, pk)
	return appendStr(b, rk)
}

// partitionPrefixLen returns the length of an entity key's partition
// prefix (namespace, table id and str(pk)): every key of the partition
// starts with it.
func partitionPrefixLen(k []byte) int {
	for i := 9; i+1 < len(k); i++ {
		if k[i] == 0x00 {
			if k[i+1] == 0x01 {
				return i + 2
			}
			i++ // 0x00 0xFF, an escaped NUL
		}
	}
	return len(k)
}

// decodeEntityKey returns the PartitionKey and RowKey of an entity key.
func decodeEntityKey(k []byte) (pk, rk string, err error) {
	if len(k) < 9 || k[0] != nsEntities {
		return "", "", errBadKey
	}
	pk, rest, err := readStr(k[9:])
	if err != nil {
		return "", "", err
	}
	rk, rest, err = readStr(rest)
	if err != nil || len(rest) != 0 {
		return "", "", errBadKey
	}
	return pk, rk, nil
}

// position returns the kv key at a planner position in table id. Start
// and end positions encode the same way: a range [position(start),
// position(end)) holds exactly the keys between the two positions.
func position(id uint64, p odata.Position, end bool) []byte {
	b := tablePrefix(id)
	switch p.Kind {
	case odata.Unbounded:
		if end {
			return tablePrefix(id + 1)
		}
		return b
	case odata.BeforePartition:
		return appendStr(b, p.PK)
	case odata.AfterPartition:
		b = appendStr(b, p.PK)
		b[len(b)-1] = 0x02 // just past every key of the partition
		return b
	case odata.BeforeKey:
		return appendStr(appendStr(b, p.PK), p.RK)
	case odata.AfterKey:
		return append(appendStr(appendStr(b, p.PK), p.RK), 0x00)
	}
	panic("tablestore: unknown position kind")
}
