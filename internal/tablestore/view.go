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
//
// From its second get of an entity on, get walks the properties from the
// front only once: every property it steps over is remembered (props),
// and a later get looks among those first and then walks on from where
// the last one stopped. The first get walks without remembering, as most
// filters read one property (remembering cost it ~40%).
// A filter of k conditions on an entity of p properties so costs one
// walk, not k: 15 conditions on properties near the end of a
// 250-property entity (the guide's wide entities) took 30 µs an entity
// walking from the front each time.
type view struct {
	key, val []byte
	pk, rk   string
	keysOK   bool
	bad      bool // the value did not decode; the full decode reports it

	gets  int       // this entity's gets of its own properties: 0, 1, or 2 for more
	ts    int64     // the Timestamp, once the header is read
	next  int       // offset in val of the first property not walked (0: header unread)
	left  uint64    // properties not walked
	props []propRef // the properties walked, in order
}

// propRef places one walked property in view.val.
type propRef struct {
	head uint64 // the name's first 8 bytes, little-endian, zero-padded
	nlen int    // the name's length
	noff int    // the name's offset
	voff int    // the offset of its type byte
}

// nameHead is the first 8 bytes of a name as an integer, zero-padded, so
// most names that differ are told apart by one comparison.
func nameHead(s string) uint64 {
	var h uint64
	for i := 0; i < len(s) && i < 8; i++ {
		h |= uint64(s[i]) << (8 * i)
	}
	return h
}

// headAt is nameHead of the n bytes of b at off.
func headAt(b []byte, off, n int) uint64 {
	if off+8 <= len(b) {
		h := binary.LittleEndian.Uint64(b[off:])
		if n < 8 {
			h &= 1<<(8*n) - 1
		}
		return h
	}
	var h uint64
	for i := 0; i < n && i < 8; i++ {
		h |= uint64(b[off+i]) << (8 * i)
	}
	return h
}

func (v *view) reset(key, val []byte) {
	v.key, v.val, v.keysOK, v.bad = key, val, false, false
	v.gets = 0 // the walk's record is cleared by the second get
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

// header reads the version, Timestamp and property count once.
func (v *view) header() bool {
	if v.next > 0 {
		return true
	}
	b := v.val
	if len(b) < 1 || b[0] != codecVersion {
		v.bad = true
		return false
	}
	ts, n := binary.Uvarint(b[1:])
	if n <= 0 {
		v.bad = true
		return false
	}
	count, m := binary.Uvarint(b[1+n:])
	if m <= 0 {
		v.bad = true
		return false
	}
	v.ts, v.left, v.next = int64(ts), count, 1+n+m
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
	if v.gets > 0 {
		return v.getAgain(name)
	}
	v.gets = 1
	// The first get: the walk from the front, remembering nothing, inline
	// (as a call, the table scan's CPU per entity grew 5-7%).
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
		if string(b[n:n+int(l)]) == name {
			val, _, ok := v.value(len(v.val)-len(b)+n+int(l), true)
			return val, ok
		}
		b = b[n+int(l):]
		var size int
		switch t := edm.Type(b[0]); t {
		case edm.String, edm.Guid, edm.Binary:
			pl, pn := binary.Uvarint(b[1:])
			if pn <= 0 || pl > uint64(len(b)-1-pn) {
				v.bad = true
				return edm.Value{}, false
			}
			size = pn + int(pl)
		case edm.Int32, edm.Int64, edm.DateTime:
			_, pn := binary.Varint(b[1:])
			if pn <= 0 {
				v.bad = true
				return edm.Value{}, false
			}
			size = pn
		case edm.Boolean:
			size = 1
		case edm.Double:
			size = 8
		default:
			v.bad = true
			return edm.Value{}, false
		}
		if 1+size > len(b) {
			v.bad = true
			return edm.Value{}, false
		}
		b = b[1+size:]
	}
	return edm.Value{}, false
}

// getAgain is get from an entity's second get on: it looks among the
// properties walked so far, then walks on, remembering each.
func (v *view) getAgain(name string) (edm.Value, bool) {
	if v.gets == 1 {
		v.gets, v.next, v.left, v.props = 2, 0, 0, v.props[:0]
	}
	if v.bad || !v.header() {
		return edm.Value{}, false
	}
	if name == partita.PropTimestamp {
		return edm.DateTimeValue(v.ts), true
	}
	head := nameHead(name)
	for i := range v.props {
		r := &v.props[i]
		if r.head == head && r.nlen == len(name) && (r.nlen <= 8 || string(v.val[r.noff:r.noff+r.nlen]) == name) {
			val, _, ok := v.value(r.voff, true)
			return val, ok
		}
	}
	for v.left > 0 {
		b := v.val[v.next:]
		l, n := binary.Uvarint(b)
		if n <= 0 || l >= uint64(len(b)-n) {
			v.bad = true
			return edm.Value{}, false
		}
		noff, nlen := v.next+n, int(l)
		voff := noff + nlen
		match := string(v.val[noff:voff]) == name
		val, size, ok := v.value(voff, match)
		if !ok {
			return edm.Value{}, false
		}
		v.props = append(v.props, propRef{head: headAt(v.val, noff, nlen), nlen: nlen, noff: noff, voff: voff})
		v.next, v.left = voff+1+size, v.left-1
		if match {
			return val, true
		}
	}
	return edm.Value{}, false
}

// value decodes the property whose type byte is at off: its payload's
// size, and its value when want is set (a string is copied then, and only
// then). A malformed payload marks the view bad.
func (v *view) value(off int, want bool) (val edm.Value, size int, ok bool) {
	if off >= len(v.val) {
		v.bad = true
		return edm.Value{}, 0, false
	}
	t := edm.Type(v.val[off])
	b := v.val[off+1:]
	switch t {
	case edm.String, edm.Guid, edm.Binary:
		pl, pn := binary.Uvarint(b)
		if pn <= 0 || pl > uint64(len(b)-pn) {
			v.bad = true
			return edm.Value{}, 0, false
		}
		size = pn + int(pl)
		if want {
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
			return edm.Value{}, 0, false
		}
		size, val = pn, edm.Value{Type: t, Int: x}
	case edm.Boolean:
		if len(b) < 1 {
			v.bad = true
			return edm.Value{}, 0, false
		}
		size, val = 1, edm.Value{Type: t, Int: int64(b[0] & 1)}
	case edm.Double:
		if len(b) < 8 {
			v.bad = true
			return edm.Value{}, 0, false
		}
		size, val = 8, edm.Value{Type: t, Float: math.Float64frombits(binary.LittleEndian.Uint64(b))}
	default:
		v.bad = true
		return edm.Value{}, 0, false
	}
	return val, size, true
}
