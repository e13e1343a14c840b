package wire

import (
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/partita/partita"
)

// TestDecodeEntityInPlace: the in-place decode gives the same entity as
// DecodeEntity; a string value without escapes aliases the body, while the
// keys, names and an escaped value do not.
func TestDecodeEntityInPlace(t *testing.T) {
	payload := strings.Repeat("abcdefghijklmnopqrstuvwxyz0123456789", 30)
	body := []byte(`{"PartitionKey":"p0007","RowKey":"r1","Seq@odata.type":"Edm.Int64","Seq":"1234","S@odata.type":"Edm.String","S":"typed",` +
		`"Esc":"a\tb","Bin@odata.type":"Edm.Binary","Bin":"AQID","Payload":"` + payload + `","Empty":""}`)
	want, wpk, wrk, werr := DecodeEntity(body)
	got, gpk, grk, gerr := DecodeEntityInPlace(body)
	if werr != nil || gerr != nil || !reflect.DeepEqual(got, want) || gpk != wpk || grk != wrk {
		t.Fatalf("in place %+v %v; copy %+v %v", got, gerr, want, werr)
	}
	in := func(s string) bool {
		if len(s) == 0 {
			return false
		}
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		b := uintptr(unsafe.Pointer(&body[0]))
		return p >= b && p < b+uintptr(len(body))
	}
	if in(got.PartitionKey) || in(got.RowKey) {
		t.Errorf("the keys alias the body")
	}
	for _, p := range got.Properties {
		if in(p.Name) {
			t.Errorf("name %s aliases the body", p.Name)
		}
		shared := p.Name == "Payload" || p.Name == "S"
		if in(p.Value.Str) != shared || (len(p.Value.Bin) > 0 && in(unsafe.String(&p.Value.Bin[0], len(p.Value.Bin)))) {
			t.Errorf("%s: aliases the body %v, want %v", p.Name, in(p.Value.Str), shared)
		}
	}
	// The point of it: the 1 KiB payload is not copied.
	big := []byte(`{"PartitionKey":"p0007","RowKey":"r000000001234","Payload":"` + strings.Repeat("x", 1024) + `"}`)
	copyAllocs := testing.AllocsPerRun(100, func() { DecodeEntity(big) })
	inPlaceAllocs := testing.AllocsPerRun(100, func() { DecodeEntityInPlace(big) })
	if inPlaceAllocs >= copyAllocs {
		t.Errorf("in place: %v allocations, copy %v", inPlaceAllocs, copyAllocs)
	}
}

// BenchmarkDecodeEntity1K/InPlace: the bench tool's entity, copied or in place.
func BenchmarkDecodeEntity1K(b *testing.B) { benchmarkDecode1K(b, DecodeEntity) }

func BenchmarkDecodeEntityInPlace1K(b *testing.B) { benchmarkDecode1K(b, DecodeEntityInPlace) }

func benchmarkDecode1K(b *testing.B, decode func([]byte) (*partita.Entity, bool, bool, error)) {
	payload := strings.Repeat("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/", 16)
	body := []byte(`{"PartitionKey":"p0007","RowKey":"r000000001234","Seq@odata.type":"Edm.Int64","Seq":"1234","Bucket":234,"Payload":"` + payload + `"}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, _, err := decode(body); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzDecodeEntityInPlace: the in-place decode accepts and rejects what
// DecodeEntity does, with the same entity and error.
func FuzzDecodeEntityInPlace(f *testing.F) {
	for _, s := range []string{`{"PartitionKey":"p","RowKey":"r","a":"x\ty","b":"plain","c@odata.type":"Edm.Binary","c":"AQID"}`,
		`{"PartitionKey":"","RowKey":"\u00e9","g@odata.type":"Edm.Guid","g":"c9da6455-213d-42c9-9a79-3e9149a57833","s@odata.type":"Edm.String","s":"v"}`,
		`{"PartitionKey":1}`, `{"a":"b","a":"c"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		want, wpk, wrk, werr := DecodeEntity(body)
		got, gpk, grk, gerr := DecodeEntityInPlace(body)
		if !reflect.DeepEqual(got, want) || gpk != wpk || grk != wrk || !reflect.DeepEqual(gerr, werr) {
			t.Fatalf("%q: in place %+v %v %v %v; copy %+v %v %v %v", body, got, gpk, grk, gerr, want, wpk, wrk, werr)
		}
	})
}
