package bench

import (
	"math/rand/v2"
	"slices"
	"strconv"
)

// Key layout. Entity i of the bench's key space lives in partition
// i % partitions at row i / partitions:
//
//	PartitionKey  "p" + 4-digit partition
//	RowKey        "r" + 12-digit row
//
// so a partition's rows are contiguous and a RowKey range of n rows returns
// n entities. Batch entities use RowKeys "b<run tag><12-digit seq>", which
// sort before every "r" row and never collide across runs.
//
// Every entity carries Seq (Int64, i), Bucket (Int32, i % 1000) and Payload
// (a String of --entity-size random characters). Scans filter on Bucket:
// partition-scan "Bucket lt 100" (10% of a partition), table-scan
// "Bucket eq 7" (0.1% of the table).

const (
	pkWidth = 4
	rkWidth = 12
)

// keyspace maps entity numbers to keys.
type keyspace struct {
	partitions int
}

func (k keyspace) pkOf(i uint64) uint64  { return i % uint64(k.partitions) }
func (k keyspace) rowOf(i uint64) uint64 { return i / uint64(k.partitions) }

func appendPK(dst []byte, p uint64) []byte {
	dst = append(dst, 'p')
	return itoaPad(dst, p, pkWidth)
}

func appendRK(dst []byte, row uint64) []byte {
	dst = append(dst, 'r')
	return itoaPad(dst, row, rkWidth)
}

func pkString(p uint64) string   { return string(appendPK(nil, p)) }
func rkString(row uint64) string { return string(appendRK(nil, row)) }

// appendEntityPath appends "/table(PartitionKey='pk',RowKey='rk')".
func appendEntityPath(dst []byte, table string, pk, rk []byte) []byte {
	dst = append(dst, '/')
	dst = append(dst, table...)
	dst = append(dst, "(PartitionKey='"...)
	dst = append(dst, pk...)
	dst = append(dst, "',RowKey='"...)
	dst = append(dst, rk...)
	return append(dst, "')"...)
}

// payloadAlphabet is 64 characters that need no JSON escaping.
const payloadAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// appendPayload appends n random characters: fresh per entity, so a storage
// engine that compresses blocks sees realistic (incompressible-ish) data.
// Each random word gives ten characters (6 bits each). The bench client
// shares the machine with the server it measures, so the characters are
// stored into space grown once: appending them one at a time was a third of
// the client's CPU under $batch.
func appendPayload(dst []byte, rng *rand.Rand, n int) []byte {
	if n <= 0 {
		return dst
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	out := dst[start:]
	for len(out) > 0 {
		x := rng.Uint64()
		w := out[:min(10, len(out))]
		for j := range w {
			w[j] = payloadAlphabet[x&63]
			x >>= 6
		}
		out = out[len(w):]
	}
	return dst
}

// appendEntityJSON appends the JSON body of entity seq with keys pk/rk.
// extra, when not empty, is one more "name":value member (merge marks).
func appendEntityJSON(dst []byte, pk, rk []byte, seq uint64, payload int, rng *rand.Rand, extra string) []byte {
	dst = append(dst, `{"PartitionKey":"`...)
	dst = append(dst, pk...)
	dst = append(dst, `","RowKey":"`...)
	dst = append(dst, rk...)
	dst = append(dst, `","Seq@odata.type":"Edm.Int64","Seq":"`...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, `","Bucket":`...)
	dst = strconv.AppendUint(dst, seq%1000, 10)
	if extra != "" {
		dst = append(dst, ',')
		dst = append(dst, extra...)
	}
	dst = append(dst, `,"Payload":"`...)
	dst = appendPayload(dst, rng, payload)
	return append(dst, `"}`...)
}
