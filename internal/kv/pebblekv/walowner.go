package pebblekv

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A write-ahead log directory apart from the data (Options.WALDir) is
// Pebble's to fill, but Pebble locks only the data directory. Two stores
// given one WAL directory both wrote "000004.log" there, each over the
// other's, and a store opened on another store's WAL directory would
// replay that store's logs as its own. So the WAL directory is locked
// (walLockFile) for as long as a store uses it, and it records which
// store it belongs to (walOwnerFile): the random identity that the data
// directory keeps in storeIDFile.
const (
	storeIDFile  = "PARTITA-STORE-ID"
	walLockFile  = "PARTITA-WAL-LOCK"
	walOwnerFile = "PARTITA-WAL-OWNER"
)

// ErrWALDirOwned is wrapped by Open when the WAL directory belongs to
// another store.
var ErrWALDirOwned = errors.New("belongs to another store")

// walClaim is a WAL directory locked for a store: the lock, and what Open
// still has to record once Pebble holds the data directory's own lock.
type walClaim struct {
	lock   io.Closer
	id     string // the data directory's store identity; "" when it has none yet
	record bool   // the WAL directory does not name its store yet
}

func (c *walClaim) release() {
	if c != nil && c.lock != nil {
		c.lock.Close()
		c.lock = nil
	}
}

// claimWALDir locks walDir for the store in dir and checks that it is
// this store's, or nobody's, before Pebble reads a log there.
func claimWALDir(fsys vfs.FS, dir, walDir string, readOnly bool) (*walClaim, error) {
	if !readOnly {
		if err := fsys.MkdirAll(walDir, 0o755); err != nil {
			return nil, fmt.Errorf("pebblekv: WAL directory: %w", err)
		}
	} else if _, err := fsys.Stat(walDir); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("pebblekv: WAL directory %s does not exist: give the one the store was served with (a read-only open makes nothing)", walDir)
	} else if _, err := fsys.Stat(fsys.PathJoin(walDir, walLockFile)); errors.Is(err, fs.ErrNotExist) {
		// No store ever kept its log there (each locks the directory
		// first), so no server is using it either: a read-only open
		// (check) writes nothing, and Pebble's own check says where the
		// log is.
		return &walClaim{}, nil
	}
	lock, err := fsys.Lock(fsys.PathJoin(walDir, walLockFile))
	// Another process's lock is EAGAIN; Pebble's file system refuses a
	// lock its own process holds with an error of its own.
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) || err != nil && strings.Contains(err.Error(), "held by current process") {
		return nil, fmt.Errorf("pebblekv: WAL directory %s is %w (%v)", walDir, ErrInUse, err)
	}
	if err != nil {
		return nil, fmt.Errorf("pebblekv: lock the WAL directory: %w", err)
	}
	c := &walClaim{lock: lock}
	id, err := readLine(fsys, fsys.PathJoin(dir, storeIDFile))
	if err != nil {
		c.release()
		return nil, err
	}
	owner, err := readLine(fsys, fsys.PathJoin(walDir, walOwnerFile))
	if err != nil {
		c.release()
		return nil, err
	}
	if owner != "" && owner != id {
		c.release()
		if id == "" {
			// A new store, or one whose identity file was lost.
			return nil, fmt.Errorf("pebblekv: WAL directory %s %w (%s), and %s has no store identity (%s): give each store a WAL directory of its own, or, if the log there is this store's and only its identity file was lost, remove %s",
				walDir, ErrWALDirOwned, owner, dir, storeIDFile, fsys.PathJoin(walDir, walOwnerFile))
		}
		return nil, fmt.Errorf("pebblekv: WAL directory %s %w (%s), not to the one in %s (%s): give each store a WAL directory of its own", walDir, ErrWALDirOwned, owner, dir, id)
	}
	c.id, c.record = id, owner == ""
	return c, nil
}

// finish records, once Pebble holds the data directory's lock, the store's
// identity (new when it has none) and the WAL directory's owner.
func (c *walClaim) finish(fsys vfs.FS, dir, walDir string) error {
	if c.id == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		c.id = hex.EncodeToString(b[:])
		if err := replaceFile(fsys, dir, fsys.PathJoin(dir, storeIDFile), []byte(c.id+"\n")); err != nil {
			return fmt.Errorf("pebblekv: write the store's identity: %w", err)
		}
	}
	if c.record {
		if err := replaceFile(fsys, walDir, fsys.PathJoin(walDir, walOwnerFile), []byte(c.id+"\n")); err != nil {
			return fmt.Errorf("pebblekv: record the WAL directory's store: %w", err)
		}
		c.record = false
	}
	return nil
}

// readLine returns the first line of the small file name, "" when it
// does not exist.
func readLine(fsys vfs.FS, name string) (string, error) {
	b, err := readSmallFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("pebblekv: read %s: %w", name, err)
	}
	return strings.TrimSpace(string(b)), nil
}
