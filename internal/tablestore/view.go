package tablestore

import (
	"encoding/binary"
	"math"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
)

// view lets a filter read an encoded entity without decoding it: get finds
// one property in the value bytes (see codec.go for the layout) and
// decodes the keys only when the filter asks for them. Scans evaluate the
// filter on a view and fully decode only the entities that match, so a
// table scan examining many entities allocates for the few it returns.
type view struct {
	key, val []byte
	pk, rk   string
	keysOK   bool
	bad      bool // the value did not decode; the full decode reports it
}

func (v *view) reset(key, val []byte) {
	v.key, v.val, v.keysOK, v.bad = key, val, false, false
}

func (v *view) keys() bool {
	if !v.keysOK {
		pk, rk, err := decodeEntityKey(v.key)
		if err != nil {
			v.bad = true
			return false
		}
		v.pk, v.rk, v.keysOK = pk, rk, true
	}
	return true
}

// get is an odata.Getter.
func (v *view) get(name string) (edm.Value, bool) {
	switch name {
	case partita.PropPartitionKey:
		if !v.keys() {
			return edm.Value{}, false
		}
		return edm.StringValue(v.pk), true
	case partita.PropRowKey:
		if !v.keys() {
			return edm.Value{}, false
		}
		return edm.StringValue(v.rk), true
	}
	b := v.val
	if len(b) < 1 || b[0] != codecVersion {
		v.bad = true
		return edm.Value{}, false
	}
	b = b[1:]
	ts, n := binary.Uvarint(b)
	if n <= 0 {
		v.bad = true
		return edm.Value{}, false
	}
	if name == partita.PropTimestamp {
		return edm.DateTimeValue(int64(ts)), true
	}
	b = b[n:]
	count, n := binary.Uvarint(b)
	if n <= 0 {
		v.bad = true
		return edm.Value{}, false
	}
	b = b[n:]
	for i := uint64(0); i < count; i++ {
		l, n := binary.Uvarint(b)
		if n <= 0 || l >= uint64(len(b)-n) {
			v.bad = true
			return edm.Value{}, false
		}
		match := string(b[n:n+int(l)]) == name
		b = b[n+int(l):]
		t := edm.Type(b[0])
		b = b[1:]
		var size int
		var val edm.Value
		switch t {
		case edm.String, edm.Guid, edm.Binary:
			pl, pn := binary.Uvarint(b)
			if pn <= 0 || pl > uint64(len(b)-pn) {
				v.bad = true
				return edm.Value{}, false
			}
			size = pn + int(pl)
			if match {
				if t == edm.Binary {
					val = edm.Value{Type: t, Bin: b[pn:size]}
				} else {
					val = edm.Value{Type: t, Str: string(b[pn:size])}
				}
			}
		case edm.Int32, edm.Int64, edm.DateTime:
			x, pn := binary.Varint(b)
			if pn <= 0 {
				v.bad = true
				return edm.Value{}, false
			}
			size, val = pn, edm.Value{Type: t, Int: x}
		case edm.Boolean:
			if len(b) < 1 {
				v.bad = true
				return edm.Value{}, false
			}
			size, val = 1, edm.Value{Type: t, Int: int64(b[0] & 1)}
		case edm.Double:
			if len(b) < 8 {
				v.bad = true
				return edm.Value{}, false
			}
			size, val = 8, edm.Value{Type: t, Float: math.Float64frombits(binary.LittleEndian.Uint64(b))}
		default:
			v.bad = true
			return edm.Value{}, false
		}
		if match {
			return val, true
		}
		b = b[size:]
	}
	return edm.Value{}, false
}
