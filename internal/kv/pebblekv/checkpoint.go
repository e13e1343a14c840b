package pebblekv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/partita/partita/internal/kv"
)

var _ kv.Checkpointer = (*DB)(nil)

// Checkpoint implements kv.Checkpointer with Pebble's checkpoint: the
// sstables and blob files are hard-linked (copied across devices), the
// MANIFEST, OPTIONS and write-ahead log are copied. WithFlushedWAL syncs
// the log first, so every commit that returned before the call is in the
// image; a commit is one Pebble batch, so none is in it in part. The
// image opens as a data directory of its own: when the store keeps its
// log apart (Options.WALDir), the image still holds its copy of the log
// in dir, and its OPTIONS file is rewritten to say so, or Pebble would
// refuse to open it without the original log directory. dir must not
// exist.
//
// The image is built under a hidden name beside dir (".NAME.partial-…")
// and renamed to dir only once it is whole and synced: a server killed,
// or a disk that fills, in the middle of a backup left a directory under
// the backup's own name that Pebble opened as a store without what the
// copy had not reached (empty before the MANIFEST, without the writes
// since the last flush before the log), so a restore from it lost data
// without a word. A leftover ".partial" directory is safe to delete.
func (d *DB) Checkpoint(ctx context.Context, dir string) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	if err := ctx.Err(); err != nil {
		return err
	}
	dir = filepath.Clean(dir)
	var suffix [6]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return err
	}
	tmp := d.fs.PathJoin(d.fs.PathDir(dir), "."+d.fs.PathBase(dir)+".partial-"+hex.EncodeToString(suffix[:]))
	// Pebble writes the image through the store's file system, and so
	// past its stall watch; a destination that hangs is not the store's.
	// The version file, the rename and the directory's sync below go
	// through d.fs, which the watch does not wrap.
	defer d.watcher.elsewhere(tmp)()
	fail := func(err error) error {
		d.fs.RemoveAll(tmp)
		return fmt.Errorf("pebblekv: checkpoint into %s: %w", dir, err)
	}
	if err := d.db.Checkpoint(tmp, pebble.WithFlushedWAL()); err != nil {
		return fail(err)
	}
	if len(d.dirs) > 1 {
		if err := clearWALDir(tmp); err != nil {
			return fail(err)
		}
	}
	// The backup is a data directory of this store version: record it, so
	// that a later partita reads it as what it is.
	if err := writeStoreVersion(d.fs, tmp); err != nil {
		return fail(err)
	}
	// The backup is no more open than the store: Pebble makes the
	// directory 0755 whatever the data directory's mode, and a store
	// kept 0700 gave a backup every local user could read. (Its files
	// are left alone: the tables are hard links of the store's own.)
	if fi, err := os.Stat(d.dirs[0]); err == nil {
		if err := os.Chmod(tmp, fi.Mode().Perm()); err != nil {
			return fail(err)
		}
	}
	if err := d.fs.Rename(tmp, dir); err != nil {
		return fail(err)
	}
	if err := syncDir(d.fs, d.fs.PathDir(dir)); err != nil {
		return fmt.Errorf("pebblekv: checkpoint into %s: %w", dir, err)
	}
	return nil
}

// clearWALDir empties the wal_dir option of the OPTIONS files in dir,
// atomically (replaceFile).
func clearWALDir(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "OPTIONS-*"))
	if err != nil {
		return err
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		lines := bytes.Split(b, []byte("\n"))
		for i, l := range lines {
			if bytes.HasPrefix(bytes.TrimSpace(l), []byte("wal_dir=")) {
				indent := l[:len(l)-len(bytes.TrimLeft(l, " \t"))]
				lines[i] = append(bytes.Clone(indent), "wal_dir="...)
			}
		}
		if err := replaceFile(vfs.Default, dir, name, bytes.Join(lines, []byte("\n"))); err != nil {
			return err
		}
	}
	return nil
}
