package pgkv

import "github.com/partita/partita/internal/kv"

// Loaded returns how many rows an iterator of this package holds in
// memory: the chunk it last fetched.
func Loaded(it kv.Iterator) int { return len(it.(*iter).keys) }

// LoadedBytes returns the bytes of the keys and values an iterator of
// this package holds: the chunk it last fetched.
func LoadedBytes(it kv.Iterator) int {
	n := 0
	for i, k := range it.(*iter).keys {
		n += len(k) + len(it.(*iter).vals[i])
	}
	return n
}

// ChunkBytes is the bytes a chunk is cut at.
const ChunkBytes = iterChunkBytes
