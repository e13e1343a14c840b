package pebblekv

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage"
	"github.com/cockroachdb/pebble/v2/sstable/blob"
)

// checkBlobFiles checks that every blob file the store's current version
// references is there, of the size the MANIFEST records, with a footer
// that reads: Pebble's Open checks as much of the sstables (their
// presence and size), not of the blob files. A blob file that cannot be
// opened made Pebble v2.1 panic on the first read of a value in it
// ("unknown metadata type: <nil>": its fileCacheHandle.findOrCreateBlob
// reports the corruption without the file's metadata, cockroachdb/pebble
// #5127), so partita check crashed with a Go stack trace and a server
// started on such a directory answered every read of those values with a
// recovered panic. It costs one footer read per blob file.
func checkBlobFiles(ctx context.Context, db *pebble.DB) error {
	// The version first, then the files: a blob file the version names
	// was on disk before the version was installed.
	v := db.DebugCurrentVersion()
	prov := db.ObjProvider()
	onDisk := make(map[uint64]objstorage.ObjectMetadata)
	for _, m := range prov.List() {
		if m.FileType.String() == "blob" {
			onDisk[uint64(m.DiskFileNum)] = m
		}
	}
	bad := make(map[uint64]error)
	for bf := range v.BlobFiles.All() {
		phys := bf.Physical
		num := uint64(phys.FileNum)
		name := fmt.Sprintf("%s.blob", phys.FileNum)
		meta, ok := onDisk[num]
		if !ok {
			bad[num] = &blobFileError{name, errors.New("is missing")}
			continue
		}
		if meta.IsRemote() {
			continue
		}
		size, err := prov.Size(meta)
		if err != nil {
			bad[num] = &blobFileError{name, fmt.Errorf("cannot be read: %w", err)}
			continue
		}
		if uint64(size) != phys.Size {
			bad[num] = &blobFileError{name, fmt.Errorf("is %d bytes long, the MANIFEST says %d", size, phys.Size)}
			continue
		}
		r, err := prov.OpenForReading(ctx, meta.FileType, meta.DiskFileNum, objstorage.OpenOptions{})
		if err != nil {
			bad[num] = &blobFileError{name, fmt.Errorf("cannot be read: %w", err)}
			continue
		}
		fr, err := blob.NewFileReader(ctx, r, blob.FileReaderOptions{})
		if err != nil {
			r.Close()
			bad[num] = &blobFileError{name, fmt.Errorf("cannot be read: %w", err)}
			continue
		}
		fr.Close()
	}
	if len(bad) == 0 {
		return nil
	}
	// v holds no reference: a compaction may have replaced a file and
	// Pebble deleted it meanwhile. A file the version current now still
	// names was live all along (file numbers are never reused), so what
	// was found wrong with it is so.
	var errs []error
	for bf := range db.DebugCurrentVersion().BlobFiles.All() {
		if err, ok := bad[uint64(bf.Physical.FileNum)]; ok {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrCorruption, errors.Join(errs...))
}

// blobOpenPanic reports whether v, recovered from a read, is Pebble
// v2.1's panic for a blob file it could not open (checkBlobFiles).
func blobOpenPanic(v any) bool {
	s, ok := v.(string)
	return ok && strings.HasPrefix(s, "unknown metadata type")
}

// unopenableBlob handles blobOpenPanic's panic, recovered from a read:
// a blob file of the store cannot be opened (damaged since the store
// opened: Open checks them). It is corruption of a file, as a block of an
// sstable that fails its checksum is, and it stops the store the same
// way (failstop.go, corruption): a compaction that reads the file would
// hit the same panic with nothing to recover it, and the read's own
// iterator is lost with the panic, holding references that make Pebble's
// Close panic in turn. It names the file when checkBlobFiles finds it.
func (d *DB) unopenableBlob() {
	err := checkBlobFiles(context.Background(), d.db)
	path := d.dirs[0]
	if err == nil {
		err = fmt.Errorf("%w: a blob file of the store cannot be opened", ErrCorruption)
	} else if bf := (*blobFileError)(nil); errors.As(err, &bf) {
		path = d.fs.PathJoin(d.dirs[0], bf.name)
	}
	d.fatal.corruptFile(path, err)
}

// blobFileError is what is wrong with one blob file, by its name.
type blobFileError struct {
	name string // 000012.blob
	err  error
}

func (e *blobFileError) Error() string { return "blob file " + e.name + " " + e.err.Error() }
func (e *blobFileError) Unwrap() error { return e.err }
