package pebblekv

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// StoreVersion is the version of the data directory's format that this
// build reads and writes: Pebble's format major version (formatMajorVersion)
// together with tablestore's key layout. It is recorded in the file
// StoreVersionFile of the data directory. A release that changes either
// raises it, keeps opening every older version (the upgrade test in
// internal/tablestore opens the directories of earlier releases), and an
// older release refuses to open the directory (ErrNewerStore).
//
// Version 1: Pebble format FormatValueSeparation (Pebble v2.1.7's
// FormatNewest, which every directory written before the version file
// existed was opened with), tablestore's layout as of 2026-11.
const StoreVersion = 1

// formatMajorVersion is the Pebble format major version that StoreVersion
// uses. Pebble only ratchets a directory's format up; a lower value here
// would not downgrade existing directories, a higher one is a new
// StoreVersion.
const formatMajorVersion = pebble.FormatValueSeparation

// StoreVersionFile is the name, in the data directory, of the file that
// records the store version ("partita store version N\n").
const StoreVersionFile = "PARTITA-STORE-VERSION"

const versionPrefix = "partita store version "

// ErrNewerStore is wrapped by Open when the data directory was written by a
// newer partita, with a store version this build does not understand.
var ErrNewerStore = errors.New("pebblekv: data directory written by a newer partita")

// checkStoreVersion refuses a directory whose recorded store version is
// newer than StoreVersion. A directory without the file is new, or was
// written before the file existed (version 1).
func checkStoreVersion(fsys vfs.FS, dir string) error {
	b, err := readSmallFile(fsys, fsys.PathJoin(dir, StoreVersionFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pebblekv: read store version: %w", err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	v, err := strconv.ParseUint(strings.TrimPrefix(s, versionPrefix), 10, 32)
	if !strings.HasPrefix(s, versionPrefix) || err != nil || v == 0 {
		return fmt.Errorf("pebblekv: %s: not a store version: %q", fsys.PathJoin(dir, StoreVersionFile), b)
	}
	if v > StoreVersion {
		return fmt.Errorf("%w: %s is at store version %d, and this partita understands store versions up to %d; run a partita release that supports store version %d",
			ErrNewerStore, dir, v, StoreVersion, v)
	}
	return nil
}

// writeStoreVersion records StoreVersion in dir (which Pebble has created),
// unless it is already there: a temporary file, synced, renamed over the
// old one, and the directory synced.
func writeStoreVersion(fsys vfs.FS, dir string) error {
	name := fsys.PathJoin(dir, StoreVersionFile)
	want := versionPrefix + strconv.Itoa(StoreVersion) + "\n"
	if b, err := readSmallFile(fsys, name); err == nil && string(b) == want {
		return nil
	}
	if err := replaceFile(fsys, dir, name, []byte(want)); err != nil {
		return fmt.Errorf("pebblekv: write store version: %w", err)
	}
	return nil
}

// replaceFile writes data to the file name in dir atomically: a temporary
// file, synced, renamed over name, and dir synced.
func replaceFile(fsys vfs.FS, dir, name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := fsys.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, name)
	}
	if err != nil {
		fsys.Remove(tmp)
		return err
	}
	return syncDir(fsys, dir)
}

// syncDir syncs the directory dir, so that a rename in it lasts.
func syncDir(fsys vfs.FS, dir string) error {
	f, err := fsys.OpenDir(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readSmallFile returns the first 256 bytes of the file name: the
// store's own small files (version, identity, WAL owner). A missing file
// is an error that wraps fs.ErrNotExist.
func readSmallFile(fsys vfs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 256))
}
