package tablestore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"unsafe"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
)

// # Entity value encoding
//
//	version (1 byte, = 1)
//	Timestamp ticks (uvarint)
//	property count (uvarint)
//	per property: name length (uvarint) | name | type (1 byte, edm.Type) | payload
//
// Payloads: String, Guid, Binary: length (uvarint) | bytes; Int32, Int64,
// DateTime: varint; Boolean: 1 byte; Double: 8 bytes, IEEE bits
// little-endian. The keys are not repeated in the value: they are in the
// kv key.
const codecVersion = 1

var errBadValue = errors.New("tablestore: malformed entity value")

// appendEntity appends the encoding of e's Timestamp and properties.
func appendEntity(b []byte, e *partita.Entity) []byte {
	b = append(b, codecVersion)
	b = binary.AppendUvarint(b, uint64(e.Timestamp))
	b = binary.AppendUvarint(b, uint64(len(e.Properties)))
	for _, p := range e.Properties {
		b = binary.AppendUvarint(b, uint64(len(p.Name)))
		b = append(b, p.Name...)
		v := p.Value
		b = append(b, byte(v.Type))
		switch v.Type {
		case edm.String, edm.Guid:
			b = binary.AppendUvarint(b, uint64(len(v.Str)))
			b = append(b, v.Str...)
		case edm.Binary:
			b = binary.AppendUvarint(b, uint64(len(v.Bin)))
			b = append(b, v.Bin...)
		case edm.Int32, edm.Int64, edm.DateTime:
			b = binary.AppendVarint(b, v.Int)
		case edm.Boolean:
			b = append(b, byte(v.Int))
		case edm.Double:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Float))
		}
	}
	return b
}

// encodedSize bounds len(appendEntity(nil, e)) from above, so the
// encoding can be written into one allocation: every varint takes at most
// binary.MaxVarintLen64 bytes.
func encodedSize(e *partita.Entity) int {
	n := 1 + 2*binary.MaxVarintLen64
	for _, p := range e.Properties {
		n += 2*binary.MaxVarintLen64 + 1 + len(p.Name) + len(p.Value.Str) + len(p.Value.Bin)
	}
	return n
}

// valuePrefix returns the first bytes of every encoded entity whose
// Timestamp is ticks: an ETag condition is a prefix test (uvarints are
// prefix-free, so no other Timestamp's encoding starts the same way).
func valuePrefix(ticks int64) []byte {
	return binary.AppendUvarint([]byte{codecVersion}, uint64(ticks))
}

// decodeTicks returns the Timestamp of an encoded entity without decoding
// its properties.
func decodeTicks(b []byte) (int64, error) {
	ticks, _, err := decodeHead(b)
	return ticks, err
}

// decodeHead reads the version and the Timestamp that lead every value and
// returns the rest.
func decodeHead(b []byte) (ticks int64, rest []byte, err error) {
	if len(b) < 1 || b[0] != codecVersion {
		return 0, nil, errBadValue
	}
	ts, n := binary.Uvarint(b[1:])
	if n <= 0 {
		return 0, nil, errBadValue
	}
	return int64(ts), b[1+n:], nil
}

// decodeEntityCopy decodes a value into e, reusing e.Properties' storage;
// keys are left alone. b may be the engine's memory, valid only during the
// transaction, and e outlives it: e's names, strings and binaries point
// into one private copy of b, one allocation instead of one per property.
func decodeEntityCopy(b []byte, e *partita.Entity) error {
	return decodeEntityInto(bytes.Clone(b), e, true)
}

// decodeEntityInto decodes b into e. With borrow, the names, strings and
// binaries of e point into b instead of being copied, so e is valid only
// while b is (a query page's entity lives for one callback).
func decodeEntityInto(b []byte, e *partita.Entity, borrow bool) error {
	ts, b, err := decodeHead(b)
	if err != nil {
		return err
	}
	e.Timestamp = ts
	count, n := binary.Uvarint(b)
	if n <= 0 || count > uint64(len(b)) {
		return errBadValue
	}
	b = b[n:]
	props := e.Properties[:0]
	for i := uint64(0); i < count; i++ {
		var p partita.Property
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return errBadValue
		}
		p.Name = bytesString(b[n:n+int(l)], borrow)
		b = b[n+int(l):]
		if len(b) < 1 {
			return errBadValue
		}
		p.Value.Type = edm.Type(b[0])
		b = b[1:]
		switch p.Value.Type {
		case edm.String, edm.Guid, edm.Binary:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return errBadValue
			}
			switch {
			case p.Value.Type != edm.Binary:
				p.Value.Str = bytesString(b[n:n+int(l)], borrow)
			case borrow:
				p.Value.Bin = b[n : n+int(l) : n+int(l)]
			default:
				p.Value.Bin = append([]byte(nil), b[n:n+int(l)]...)
			}
			b = b[n+int(l):]
		case edm.Int32, edm.Int64, edm.DateTime:
			v, n := binary.Varint(b)
			if n <= 0 {
				return errBadValue
			}
			p.Value.Int = v
			b = b[n:]
		case edm.Boolean:
			if len(b) < 1 {
				return errBadValue
			}
			p.Value.Int = int64(b[0] & 1)
			b = b[1:]
		case edm.Double:
			if len(b) < 8 {
				return errBadValue
			}
			p.Value.Float = math.Float64frombits(binary.LittleEndian.Uint64(b))
			b = b[8:]
		default:
			return errBadValue
		}
		props = append(props, p)
	}
	if len(b) != 0 {
		return errBadValue
	}
	e.Properties = props
	return nil
}

// bytesString returns b as a string: a copy, or with borrow the same
// memory (b must then outlive every use of the string and not change).
func bytesString(b []byte, borrow bool) string {
	if !borrow || len(b) == 0 {
		return string(b)
	}
	return unsafe.String(&b[0], len(b))
}
