package wasm

// The on-disk compilation cache.
//
// wazero's own file cache keeps native code in files named by a hash of
// the module and checks them with a CRC only: whoever can write its
// directory makes any module run any code. Snodo therefore never lets
// wazero read a directory anyone else can reach. It keeps a store of its
// own in the cache directory, one file per compiled module, authenticated
// with HMAC-SHA256 under a per-user key kept outside the cache directory,
// and gives wazero a private directory that lives only as long as the Host.
// Around each compilation (diskCache.compile, serialized per Host):
//
//  1. the store's entry for these exact bytes, if any, is read once into
//     memory and its MAC checked; those checked bytes, and only they, are
//     written into the private directory under wazero's file name;
//  2. wazero compiles, reading that file or writing a new one;
//  3. a new file wazero wrote is read back and sealed into the store, and
//     the private directory is emptied.
//
// An entry that fails any check is removed, logged at warn, and the module
// compiled afresh.

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
)

const (
	// cacheKeySize is the size of the MAC key, in bytes.
	cacheKeySize = 32
	// entryMagic starts every store entry (format version 1).
	entryMagic = "SNODOCM1"
	// entryHeader is the magic, the MAC and the name's length.
	entryHeader = len(entryMagic) + sha256.Size + 2
	// maxEntryBytes bounds what is read of one store entry or one file
	// wazero wrote.
	maxEntryBytes = 1 << 30
	// privatePrefix names the private directories given to wazero.
	privatePrefix = "compile-"
	// staleAfter is how long a private directory nobody touched stays
	// before a new Host removes it (its process ended without Close).
	staleAfter = 24 * time.Hour
)

// entryKeyDomain and macDomain separate Snodo's hashes from any other use
// of the same bytes.
const (
	entryKeyDomain = "snodo wasm compiled module v1\x00"
	macDomain      = "snodo wasm compiled module entry v1\x00"
)

// UnsafeCacheError is the error of NewHost for a compilation cache
// directory, or a cache key file, that someone other than the user (or
// root) could change: whoever can would choose the native code modules
// run. Path is what was refused, Problem what is wrong with it and Fix
// what to do.
type UnsafeCacheError struct {
	Path    string
	Problem string
	Fix     string
}

func (e *UnsafeCacheError) Error() string {
	return fmt.Sprintf("wasm: compilation cache: %s %s, so whoever can change it could choose the code modules run; refusing it: %s",
		e.Path, e.Problem, e.Fix)
}

// diskCache is a Host's on-disk compilation cache.
type diskCache struct {
	dir     string // the cache directory: the store
	key     []byte // the MAC key
	private string // the private directory given to wazero
	// engineDir is the directory wazero made in private,
	// wazero-<version>-<arch>-<os>, where it reads and writes files.
	engineDir string
	// engine is engineDir's base name; entries are keyed by it.
	engine string
	wazero wazero.CompilationCache
	logger *slog.Logger

	mu sync.Mutex // one compilation at a time: a new file is this one's
}

// openDiskCache checks dir and the key file, creating both if they are
// missing, and makes the private directory for wazero. It returns nil, nil
// when the key file has no place (no user configuration directory): the
// Host then caches in memory only.
func openDiskCache(dir, keyFile string, logger *slog.Logger) (*diskCache, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("wasm: compilation cache %s: %w", dir, err)
	}
	if keyFile == "" {
		d, err := DefaultCacheKeyFile()
		if err != nil {
			logger.Warn("wasm: compiled modules are cached in memory only: no place for the cache key", "cache_dir", dir, "error", err.Error())
			return nil, nil
		}
		keyFile = d
	}
	if keyFile, err = filepath.Abs(keyFile); err != nil {
		return nil, fmt.Errorf("wasm: compilation cache key %s: %w", keyFile, err)
	}
	if err := ensurePrivateDir(dir); err != nil {
		return nil, err
	}
	key, err := loadCacheKey(keyFile)
	if err != nil {
		return nil, err
	}
	c := &diskCache{dir: dir, key: key, logger: logger}
	c.sweep()
	if c.private, err = os.MkdirTemp(dir, privatePrefix+"*"); err != nil {
		return nil, fmt.Errorf("wasm: compilation cache %s: %w", dir, err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(c.private)
		}
	}()
	if c.wazero, err = wazero.NewCompilationCacheWithDir(c.private); err != nil {
		return nil, fmt.Errorf("wasm: compilation cache in %s: %w", c.private, err)
	}
	ents, err := os.ReadDir(c.private)
	if err != nil {
		return nil, fmt.Errorf("wasm: compilation cache: %w", err)
	}
	if len(ents) != 1 || !ents[0].IsDir() || !strings.HasPrefix(ents[0].Name(), "wazero-") {
		return nil, fmt.Errorf("wasm: compilation cache: wazero made an unexpected layout in %s", c.private)
	}
	c.engine = ents[0].Name()
	c.engineDir = filepath.Join(c.private, c.engine)
	ok = true
	return c, nil
}

// close removes the private directory; the store stays.
func (c *diskCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return os.RemoveAll(c.private)
}

// sweep removes the private directories of Hosts that ended without Close
// (a killed process): those nobody touched for staleAfter.
func (c *diskCache) sweep() {
	ents, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), privatePrefix) {
			continue
		}
		p := filepath.Join(c.dir, e.Name())
		if time.Since(newestModTime(p)) > staleAfter {
			os.RemoveAll(p)
		}
	}
}

// newestModTime is the latest modification time of dir and its entries.
func newestModTime(dir string) time.Time {
	var t time.Time
	if fi, err := os.Lstat(dir); err == nil {
		t = fi.ModTime()
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.ModTime().After(t) {
			t = fi.ModTime()
		}
	}
	return t
}

// compile compiles wasm in rt through the store (see the top of this
// file). flags are what else wazero keys compiled code by (its
// close-on-context-done switch). child, when not nil, is called on a miss
// to compile wasm into the private directory it is given, which rt's
// compile then reads.
func (c *diskCache) compile(ctx context.Context, rt wazero.Runtime, flags byte, wasm []byte, child func(dir string) error) (wazero.CompiledModule, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// A Host idle for staleAfter may have had its private directory swept
	// by another one; it is made again.
	if err := os.MkdirAll(c.engineDir, 0o700); err != nil {
		return nil, fmt.Errorf("compilation cache: %w", err)
	}
	c.clearPrivate()
	defer c.clearPrivate()
	key := c.entryKey(flags, wasm)
	planted := c.plant(key)
	if planted == nil && child != nil {
		if err := child(c.private); err != nil {
			return nil, err
		}
	}
	compiled, err := rt.CompileModule(ctx, wasm)
	if err == nil {
		c.harvest(key, planted)
	}
	return compiled, err
}

// entryKey is what an entry is stored under: the exact bytes compiled,
// wazero's version, architecture and OS (its engine directory) and flags.
func (c *diskCache) entryKey(flags byte, wasm []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(entryKeyDomain))
	h.Write([]byte(c.engine))
	h.Write([]byte{0, flags})
	h.Write(wasm)
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

func (c *diskCache) entryPath(key [sha256.Size]byte) string {
	return filepath.Join(c.dir, hex.EncodeToString(key[:]))
}

// mac is the MAC of an entry: its key, wazero's file name and the file.
func (c *diskCache) mac(key [sha256.Size]byte, name string, content []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(macDomain))
	m.Write(key[:])
	var n [8]byte
	binary.LittleEndian.PutUint16(n[:2], uint16(len(name)))
	m.Write(n[:2])
	m.Write([]byte(name))
	binary.LittleEndian.PutUint64(n[:], uint64(len(content)))
	m.Write(n[:])
	m.Write(content)
	return m.Sum(nil)
}

// seal returns the entry for wazero's file name and content under key:
// magic, MAC, the name's length (2 bytes), the name, the content.
func (c *diskCache) seal(key [sha256.Size]byte, name string, content []byte) []byte {
	b := make([]byte, 0, entryHeader+len(name)+len(content))
	b = append(b, entryMagic...)
	b = append(b, c.mac(key, name, content)...)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(name)))
	b = append(b, name...)
	return append(b, content...)
}

// open checks an entry read from the store under key and returns wazero's
// file name and content, or why it is refused.
func (c *diskCache) open(key [sha256.Size]byte, b []byte) (name string, content []byte, err error) {
	if len(b) < entryHeader || string(b[:len(entryMagic)]) != entryMagic {
		return "", nil, errors.New("not a compiled-module entry (bad header)")
	}
	sum := b[len(entryMagic) : len(entryMagic)+sha256.Size]
	n := int(binary.LittleEndian.Uint16(b[entryHeader-2 : entryHeader]))
	if len(b) < entryHeader+n {
		return "", nil, errors.New("truncated")
	}
	name, content = string(b[entryHeader:entryHeader+n]), b[entryHeader+n:]
	if !hmac.Equal(sum, c.mac(key, name, content)) {
		return "", nil, errors.New("its MAC does not match (changed, truncated, or made with another key)")
	}
	if !isEngineFileName(name) {
		return "", nil, fmt.Errorf("file name %q is not wazero's (64 hex digits)", name)
	}
	return name, content, nil
}

// isEngineFileName reports whether name is a file name wazero gives
// compiled code: 64 lower-case hex digits, so no separator and no "..".
func isEngineFileName(name string) bool {
	if len(name) != 2*sha256.Size {
		return false
	}
	for _, r := range name {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// plant writes the checked content of the entry under key, if there is
// one, into wazero's directory and returns the file it wrote.
func (c *diskCache) plant(key [sha256.Size]byte) fs.FileInfo {
	name, content, ok := c.get(key)
	if !ok {
		return nil
	}
	p := filepath.Join(c.engineDir, name)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o600)
	if err != nil {
		c.logger.Warn("wasm: compilation cache: cannot use a cached module", "path", p, "error", err.Error())
		return nil
	}
	_, err = f.Write(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	var fi fs.FileInfo
	if err == nil {
		fi, err = os.Lstat(p)
	}
	if err != nil {
		os.Remove(p)
		c.logger.Warn("wasm: compilation cache: cannot use a cached module", "path", p, "error", err.Error())
		return nil
	}
	return fi
}

// get reads the entry under key once and checks it. A missing entry is a
// miss; an entry that fails any check is discarded.
func (c *diskCache) get(key [sha256.Size]byte) (name string, content []byte, ok bool) {
	p := c.entryPath(key)
	b, err := readOwnFile(p, 0o022, maxEntryBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, false
	}
	if err == nil {
		name, content, err = c.open(key, b)
	}
	if err != nil {
		c.discard(p, err)
		return "", nil, false
	}
	return name, content, true
}

// discard removes a store entry that failed a check.
func (c *diskCache) discard(p string, why error) {
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.logger.Warn("wasm: compilation cache entry refused; compiling afresh (could not remove it)", "path", p, "reason", why.Error(), "error", err.Error())
		return
	}
	c.logger.Warn("wasm: compilation cache entry refused and removed; compiling afresh", "path", p, "reason", why.Error())
}

// harvest seals into the store, under key, the one new file wazero wrote
// while compiling (not the one plant wrote).
func (c *diskCache) harvest(key [sha256.Size]byte, planted fs.FileInfo) {
	ents, err := os.ReadDir(c.engineDir)
	if err != nil {
		return
	}
	var fresh []string
	for _, e := range ents {
		if !isEngineFileName(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err != nil || isPlanted(fi, planted) {
			continue
		}
		fresh = append(fresh, e.Name())
	}
	if len(fresh) != 1 {
		return // a hit (or the module was already in memory): nothing new
	}
	name := fresh[0]
	content, err := readOwnFile(filepath.Join(c.engineDir, name), 0o077, maxEntryBytes)
	if err == nil {
		err = c.put(key, name, content)
	}
	if err != nil {
		c.logger.Warn("wasm: compilation cache: cannot store a compiled module", "dir", c.dir, "error", err.Error())
	}
}

// isPlanted reports whether fi is still the file plant wrote (wazero
// replaces a file it rejects by renaming a new one over it).
func isPlanted(fi, planted fs.FileInfo) bool {
	return planted != nil && os.SameFile(fi, planted) && fi.Size() == planted.Size() && fi.ModTime().Equal(planted.ModTime())
}

// put writes an entry atomically: a new 0600 file, renamed into place.
// It is not synced: a torn entry fails its MAC and is compiled again.
func (c *diskCache) put(key [sha256.Size]byte, name string, content []byte) error {
	return c.writeFile(".entry-*", c.entryPath(key), c.seal(key, name, content))
}

// writeFile writes b to the store's file p atomically: a new 0600 file
// named by pattern, renamed into place.
func (c *diskCache) writeFile(pattern, p string, b []byte) error {
	f, err := os.CreateTemp(c.dir, pattern)
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// clearPrivate empties wazero's directory.
func (c *diskCache) clearPrivate() {
	ents, _ := os.ReadDir(c.engineDir)
	for _, e := range ents {
		os.RemoveAll(filepath.Join(c.engineDir, e.Name()))
	}
}

// readOwnFile reads a regular file, not through a symbolic link, owned by
// the user, with none of the permission bits in forbidden, of at most max
// bytes.
func readOwnFile(p string, forbidden fs.FileMode, max int64) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%v)", fi.Mode().Type())
	}
	if checkOwners {
		if uid, ok := fileOwner(fi); !ok || uid != effectiveUID() {
			return nil, fmt.Errorf("owned by uid %d, not by you (uid %d)", uid, effectiveUID())
		}
		if fi.Mode().Perm()&forbidden != 0 {
			return nil, fmt.Errorf("mode %v gives others access", fi.Mode().Perm())
		}
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%d bytes, over the %d-byte limit", fi.Size(), max)
	}
	// Read at once into a buffer of the file's size: a compiled module is
	// megabytes, which io.ReadAll would grow into step by step.
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("changed while it was read: %w", err)
	}
	if n, _ := f.Read(make([]byte, 1)); n != 0 {
		return nil, errors.New("changed while it was read")
	}
	return b, nil
}

// DefaultCacheKeyFile returns the default file of the key that
// authenticates the compilation cache: os.UserConfigDir()/snodo/cache.key.
// It is kept out of the cache directory so that a cache directory copied
// or restored from elsewhere brings no key that vouches for it.
func DefaultCacheKeyFile() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "snodo", "cache.key"), nil
}

// loadCacheKey reads the key file, creating it (32 random bytes, mode
// 0600) with its directory when it is missing. The file and its directory
// must be the user's alone.
func loadCacheKey(path string) ([]byte, error) {
	if err := ensurePrivateDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	b, err := readOwnFile(path, 0o077, cacheKeySize)
	if errors.Is(err, fs.ErrNotExist) {
		if err = createCacheKey(path); err == nil {
			b, err = readOwnFile(path, 0o077, cacheKeySize)
		}
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return nil, fmt.Errorf("wasm: compilation cache key %s: %w", path, err)
		}
		return nil, &UnsafeCacheError{Path: path, Problem: "is refused as the cache key (" + err.Error() + ")",
			Fix: "make it yours alone (chmod 600 " + path + ") or remove it: a new key is made and modules are compiled again"}
	}
	if len(b) != cacheKeySize {
		return nil, &UnsafeCacheError{Path: path, Problem: fmt.Sprintf("holds %d bytes, not a %d-byte key", len(b), cacheKeySize),
			Fix: "remove it: a new key is made and modules are compiled again"}
	}
	return b, nil
}

// createCacheKey writes a new key to a fresh file (O_EXCL) and links it
// into place, so that no reader sees a partial key and a key another
// process made at the same time is kept.
func createCacheKey(path string) error {
	key := make([]byte, cacheKeySize)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".cache.key-*") // O_EXCL, 0600
	if err != nil {
		return fmt.Errorf("wasm: compilation cache key %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(key)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp, path)
	}
	if errors.Is(err, fs.ErrExist) {
		return nil // made by another process: that one is the key
	}
	if err != nil {
		return fmt.Errorf("wasm: compilation cache key %s: %w", path, err)
	}
	return nil
}

// ensurePrivateDir creates dir (mode 0700) if it is missing, and checks
// that nobody but the user or root can change it or what it holds: dir
// and each of its ancestors, as written and with symbolic links resolved,
// must be owned by the user or root and not writable by group or others,
// except that an ancestor with the sticky bit (such as /tmp) may be
// writable by all.
func ensurePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("wasm: compilation cache: %w", err)
	}
	if !checkOwners {
		return nil
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("wasm: compilation cache: %w", err)
	}
	for _, d := range []string{real, dir} {
		for p, self := d, true; ; p, self = filepath.Dir(p), false {
			if err := checkDirOwner(p, dir, self); err != nil {
				return err
			}
			if parent := filepath.Dir(p); parent == p {
				break
			}
		}
	}
	return nil
}

// checkDirOwner checks one directory of ensurePrivateDir: dir itself
// (self) or an ancestor of it.
func checkDirOwner(p, dir string, self bool) error {
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("wasm: compilation cache: %w", err)
	}
	what := p
	if !self {
		what = p + " (an ancestor of " + dir + ")"
	}
	if !fi.IsDir() {
		return fmt.Errorf("wasm: compilation cache: %s is not a directory", what)
	}
	me := effectiveUID()
	if uid, ok := fileOwner(fi); !ok || uid != me && uid != 0 {
		return &UnsafeCacheError{Path: what, Problem: fmt.Sprintf("is owned by uid %d, not by you (uid %d) or root", uid, me),
			Fix: "use a cache directory of your own (snodo-run --cache-dir DIR)"}
	}
	mode := fi.Mode()
	if mode.Perm()&0o022 == 0 || !self && mode&fs.ModeSticky != 0 {
		return nil
	}
	who := "group and others"
	switch {
	case mode.Perm()&0o020 == 0:
		who = "others"
	case mode.Perm()&0o002 == 0:
		who = "group"
	}
	return &UnsafeCacheError{Path: what, Problem: fmt.Sprintf("is writable by %s (mode %v)", who, mode),
		Fix: fmt.Sprintf("run chmod go-w %s, or use another cache directory (snodo-run --cache-dir DIR)", p)}
}

// validDomain separates the MAC of a validation record from any other.
const validDomain = "snodo wasm validated module v1\x00"

// validPath is where the store records that the module whose SHA-256 is
// sum passed validation under this version of wazero.
func (c *diskCache) validPath(sum [sha256.Size]byte) string {
	h := sha256.New()
	h.Write([]byte(validDomain))
	h.Write([]byte(c.engine))
	h.Write(sum[:])
	return filepath.Join(c.dir, "valid-"+hex.EncodeToString(h.Sum(nil)))
}

// validMAC is the content of a validation record.
func (c *diskCache) validMAC(sum [sha256.Size]byte) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(validDomain))
	m.Write([]byte(c.engine))
	m.Write(sum[:])
	return m.Sum(nil)
}

// validated reports whether the store vouches, with its MAC, that the
// module whose SHA-256 is sum passed validation before; a record that
// fails a check is discarded.
func (c *diskCache) validated(sum [sha256.Size]byte) bool {
	p := c.validPath(sum)
	b, err := readOwnFile(p, 0o022, sha256.Size+1)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err == nil && !hmac.Equal(b, c.validMAC(sum)) {
		err = errors.New("validation record fails its MAC")
	}
	if err != nil {
		c.discard(p, err)
		return false
	}
	return true
}

// markValidated records that the module whose SHA-256 is sum passed
// validation: a new 0600 file, renamed into place.
func (c *diskCache) markValidated(sum [sha256.Size]byte) {
	c.writeFile(".valid-*", c.validPath(sum), c.validMAC(sum))
}
