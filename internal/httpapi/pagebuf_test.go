package httpapi

import (
	"bytes"
	"math/rand"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/partita/partita/internal/wire"
)

// TestPageBufSameBytes: a page built in pooled chunks, with items from a
// few bytes to bigger than a chunk, writes the same body and
// Content-Length as one slice would, and the chunks survive reuse.
func TestPageBufSameBytes(t *testing.T) {
	r := rand.New(rand.NewSource(22))
	for round := 0; round < 50; round++ {
		pb := newPageBuf()
		var want []byte
		last := 0
		for i, n := 0, r.Intn(400); i < n; i++ {
			size := []int{1, 100, 1100, 20000, pageChunkSize + 7}[r.Intn(5)]
			if r.Intn(10) > 0 {
				size = 1100
			}
			item := bytes.Repeat([]byte{byte('a' + i%26)}, size)
			pb.reserve(last + last/4 + 64)
			start := len(pb.cur)
			pb.cur = append(pb.cur, item...)
			last = len(pb.cur) - start
			want = append(want, item...)
			if pb.len() != len(want) {
				t.Fatalf("len %d, want %d", pb.len(), len(want))
			}
		}
		pb.full = append(pb.full, pb.cur)
		pb.n += len(pb.cur)
		w := httptest.NewRecorder()
		writeJSONChunks(w, &reqCtx{meta: wire.FullMetadata}, 200, pb.full, pb.n)
		if !bytes.Equal(w.Body.Bytes(), want) {
			t.Fatalf("round %d: body differs (%d bytes, want %d)", round, w.Body.Len(), len(want))
		}
		if cl := w.Header().Get("Content-Length"); cl != strconv.Itoa(len(want)) {
			t.Fatalf("Content-Length %s, want %d", cl, len(want))
		}
		pb.release()
	}
}
