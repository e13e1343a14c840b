package pebblekv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// checkManifest refuses a MANIFEST that is damaged before its end. Pebble
// reads the MANIFEST's records until the first one that does not read and
// takes that for the end (a write torn by a crash, which can only be the
// last record: each is synced before the next is written). A record
// damaged in the middle (bit rot, a zeroed sector, a bad copy) then makes
// Pebble open the store as it was at that point: a store of no tables and
// a fraction of its entities was served without a word, and the files
// written since, no longer in the MANIFEST it read, were deleted as
// obsolete at once. A record that reads after the one that does not is
// proof of such damage: a torn write leaves nothing whole behind it.
func checkManifest(fs vfs.FS, dir string) error {
	desc, err := pebble.Peek(dir, fs)
	if err != nil || !desc.Exists || desc.ManifestFilename == "" {
		return nil // Pebble's open says what is wrong, if anything
	}
	f, err := fs.Open(desc.ManifestFilename)
	if err != nil {
		return nil
	}
	defer f.Close()
	rr := record.NewReader(f, 0)
	for {
		at := rr.Offset()
		r, err := rr.Next()
		if err == nil {
			_, err = io.Copy(io.Discard, r)
		}
		if err == io.EOF {
			return nil
		}
		if err == nil {
			continue
		}
		if !record.IsInvalidRecord(err) {
			return nil // an I/O error: Pebble's open meets it too
		}
		next, found, err := nextWholeChunk(f, at+1)
		if err != nil || !found {
			return nil
		}
		return fmt.Errorf("pebblekv: open %s: %w: %s is damaged at byte %d, and a whole record follows at byte %d: opened as it is, the store would go back to its state before the damage, and the files written since would be deleted as obsolete; restore the data directory from a backup",
			dir, ErrCorruption, fs.PathBase(desc.ManifestFilename), at, next)
	}
}

// The MANIFEST's record format (Pebble's record package, the LevelDB log
// format): 32 KiB blocks of chunks, each with a 7-byte header: the
// masked CRC-32C of its type and payload, the payload's length, its type.
const (
	recordBlockSize  = 32 << 10
	recordHeaderSize = 7
	chunkFull        = 1
	chunkFirst       = 2
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// nextWholeChunk looks in f from byte from on for a chunk that starts a
// record (full or first) and whose checksum holds: a record written after
// the damaged one.
func nextWholeChunk(f vfs.File, from int64) (int64, bool, error) {
	buf := make([]byte, recordBlockSize)
	for block := from / recordBlockSize; ; block++ {
		n, err := f.ReadAt(buf, block*recordBlockSize)
		if n == 0 {
			if err == io.EOF || err == nil {
				return 0, false, nil
			}
			return 0, false, err
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, false, err
		}
		b := buf[:n]
		start := 0
		if block == from/recordBlockSize {
			start = int(from % recordBlockSize)
		}
		for p := start; p+recordHeaderSize <= len(b); p++ {
			if t := b[p+6]; t != chunkFull && t != chunkFirst {
				continue
			}
			end := p + recordHeaderSize + int(binary.LittleEndian.Uint16(b[p+4:p+6]))
			if end > len(b) {
				continue
			}
			c := crc32.Update(0, castagnoli, b[p+6:end])
			if (c>>15|c<<17)+0xa282ead8 == binary.LittleEndian.Uint32(b[p:p+4]) {
				return block*recordBlockSize + int64(p), true, nil
			}
		}
		if n < recordBlockSize {
			return 0, false, nil
		}
	}
}
