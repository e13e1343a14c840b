package tablestore

// MapSizes reports how many entries the store's per-table maps hold: the
// table locks, the catalog cache and the shared-store hints (tests).
func MapSizes(s *Store) (locks, cache, hints int) {
	count := func(m interface{ Range(func(k, v any) bool) }) int {
		n := 0
		m.Range(func(_, _ any) bool { n++; return true })
		return n
	}
	return s.locks.len(), count(&s.cache), count(&s.hints)
}

// MaxHints is the bound of the shared-store hints.
const MaxHints = maxHints
