package invariants

// PoisonByte fills buffers whose loan has ended: a string or slice kept
// past the end of its loan reads as a run of it, which no test expects.
const PoisonByte = 0xDB

// Poison overwrites b with PoisonByte.
func Poison(b []byte) {
	for i := range b {
		b[i] = PoisonByte
	}
}
