package pgkv

import "github.com/partita/partita/internal/kv"

// Loaded returns how many rows an iterator of this package holds in
// memory: the chunk it last fetched.
func Loaded(it kv.Iterator) int { return len(it.(*iter).keys) }
