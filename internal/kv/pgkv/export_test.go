package pgkv

import "github.com/partita/partita/internal/kv"

// ChunkSizes returns the row counts of the chunks an iterator of this
// package has fetched.
func ChunkSizes(it kv.Iterator) []int { return it.(*iter).fetched }
