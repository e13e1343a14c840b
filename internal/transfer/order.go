package transfer

import (
	"fmt"
	"hash/maphash"
)

// A Table service returns a query's entities sorted by PartitionKey, then
// RowKey, and each page's continuation leads past the page. A source that
// breaks this loops a copy for ever (pages A, B, A, B …, each continuation
// new to the page before it) or writes an entity twice; keyOrder and
// scanOrder catch it with memory that does not grow with the table.

// keyCmp compares two keys (a PartitionKey or a RowKey) in UTF-8 byte
// order (partita's, Go's) and in UTF-16 code unit order (JavaScript's,
// so Azurite's). The two differ only between a character in
// U+E000–U+FFFF and one beyond U+FFFF: UTF-16 puts the latter's
// surrogates (U+D800–U+DFFF) first.
func keyCmp[S ~string | ~[]byte](a, b S) (c8, c16 int) {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		switch {
		case len(a) < len(b):
			return -1, -1
		case len(a) > len(b):
			return 1, 1
		}
		return 0, 0
	}
	c8 = 1
	if a[i] < b[i] {
		c8 = -1
	}
	// The runes differ from the byte at i on; their lead bytes are at the
	// last non-continuation byte at or before i, the same for both when i
	// is past it (then the runes are of one length and byte order holds).
	s := i
	for s > 0 && a[s]&0xC0 == 0x80 {
		s--
	}
	if s < i {
		return c8, c8
	}
	classA, classB := utf16Class(a[i]), utf16Class(b[i])
	if classA == 2 && classB == 3 {
		return c8, 1
	}
	if classA == 3 && classB == 2 {
		return c8, -1
	}
	return c8, c8
}

// utf16Class sorts a UTF-8 lead byte: 2 for a character in U+E000–U+FFFF
// (lead bytes 0xEE, 0xEF), 3 for one beyond U+FFFF (0xF0 on), 1 else.
func utf16Class(lead byte) int {
	switch {
	case lead >= 0xF0:
		return 3
	case lead >= 0xEE:
		return 2
	}
	return 1
}

// keyAfter reports whether key (pk, rk) comes strictly after (ppk, prk)
// in either order keyCmp knows: a source sorted in one of them passes,
// and a key repeated or going back in both fails.
func keyAfter[S ~string | ~[]byte](ppk, prk, pk, rk S) bool {
	c8, c16 := keyCmp(pk, ppk)
	if c8 == 0 {
		c8, c16 = keyCmp(rk, prk)
	}
	return c8 > 0 || c16 > 0
}

// holds checks that page p's entities lie in the PartitionKey range r the
// query asked for (its first and last suffice: a page is in key order,
// which keyOrder checked), in either order keyCmp knows. A source that
// ignored the range's condition made every parallel range of a table
// return the whole table: an export of 8 entities wrote 32, without a
// word.
func (r keyRange) holds(side, table string, p *page) error {
	if !p.keyed {
		return nil
	}
	if r.Lo != "" {
		if c8, c16 := keyCmp(p.first[0], r.Lo); c8 < 0 && c16 < 0 {
			return fmt.Errorf("%s: query %s: asked for PartitionKey ge %q, the source returned PartitionKey=%q: it does not apply the filter", side, table, r.Lo, p.first[0])
		}
	}
	if r.Hi != "" {
		if c8, c16 := keyCmp(p.last[0], r.Hi); c8 >= 0 && c16 >= 0 {
			return fmt.Errorf("%s: query %s: asked for PartitionKey lt %q, the source returned PartitionKey=%q: it does not apply the filter", side, table, r.Hi, p.last[0])
		}
	}
	return nil
}

// keyOrder follows the keys of one page's entities as the page is read.
// Keys handed to add must stay valid until the next add (a page's
// response body is released only after its entities are read).
type keyOrder[S ~string | ~[]byte] struct {
	n              int
	prevPK, prevRK S
	first, last    [2]string
}

// add takes the next entity's keys; it fails when they do not come after
// the previous entity's.
func (o *keyOrder[S]) add(side, table string, pk, rk S) error {
	if o.n > 0 && !keyAfter(o.prevPK, o.prevRK, pk, rk) {
		return fmt.Errorf("%s: query %s: entity PartitionKey=%q RowKey=%q came after PartitionKey=%q RowKey=%q in one page: a Table service returns keys in order, each once", side, table, pk, rk, o.prevPK, o.prevRK)
	}
	if o.n == 0 {
		o.first = [2]string{string(pk), string(rk)}
	}
	o.n++
	o.prevPK, o.prevRK = pk, rk
	return nil
}

// end records the page's first and last keys in p, for scanOrder.
func (o *keyOrder[S]) end(p *page) {
	if o.n > 0 {
		p.keyed = true
		p.first, p.last = o.first, [2]string{string(o.prevPK), string(o.prevRK)}
	}
}

// maxTokens bounds the continuations scanOrder remembers between two
// pages with entities.
const maxTokens = 1 << 16

// scanOrder follows one scan's pages. Pages with entities must carry
// keys after the previous page's last. Empty pages (a service's scan
// budget ran out) carry only a continuation, which must not come back
// before the next entity: they are remembered, up to maxTokens of them.
type scanOrder struct {
	last   [2]string
	any    bool
	tokens scanTokens
}

// scanTokens remembers the continuations of a scan's empty pages since
// its last page with entities (or tables), as 64-bit hashes, up to
// maxTokens of them.
type scanTokens struct {
	seed maphash.Seed
	m    map[uint64]struct{}
}

// seen reports whether the continuation made of parts came before, and
// remembers it.
func (t *scanTokens) seen(parts ...string) bool {
	if t.m == nil {
		t.seed = maphash.MakeSeed()
		t.m = map[uint64]struct{}{}
	}
	var h maphash.Hash
	h.SetSeed(t.seed)
	for i, p := range parts {
		if i > 0 {
			h.WriteByte(0)
		}
		h.WriteString(p)
	}
	k := h.Sum64()
	if _, ok := t.m[k]; ok {
		return true
	}
	if len(t.m) < maxTokens {
		t.m[k] = struct{}{}
	}
	return false
}

// reset forgets the continuations: the scan made progress.
func (t *scanTokens) reset() { clear(t.m) }

// next checks page p, read with the continuation (sentPK, sentRK).
func (s *scanOrder) next(c *client, table, sentPK, sentRK string, p *page) error {
	if err := c.noProgress(table, sentPK, sentRK, p); err != nil {
		return err
	}
	if p.keyed {
		if s.any && !keyAfter(s.last[0], s.last[1], p.first[0], p.first[1]) {
			return fmt.Errorf("%s: query %s: a page starts at PartitionKey=%q RowKey=%q, not after the previous page's last PartitionKey=%q RowKey=%q: the source returns entities again (a continuation loop)", c.side, table, p.first[0], p.first[1], s.last[0], s.last[1])
		}
		s.last, s.any = p.last, true
		s.tokens.reset()
		return nil
	}
	if p.nextPK == "" && p.nextRK == "" {
		return nil
	}
	if s.tokens.seen(p.nextPK, p.nextRK) {
		return fmt.Errorf("%s: query %s: the continuation (NextPartitionKey=%q NextRowKey=%q) came back after other empty pages: the source makes no progress", c.side, table, p.nextPK, p.nextRK)
	}
	return nil
}
