package wasm

// The manifest record: what a module described itself as (snodo_describe)
// the last time these exact bytes were loaded with this configuration,
// kept in the compilation cache's store and authenticated with its key.
// It lets a client advertise the capabilities its modules answer before
// the modules are loaded (runtime.Start connects while they load); it
// never lets anything run: a module is loaded, checked and described as
// always, and the caller compares the description with the record.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/snodo/snodo/abi"
)

const (
	// manifestDomain separates the hashes and MAC of a manifest record
	// from any other.
	manifestDomain = "snodo wasm module manifest v1\x00"
	// maxManifestRecord bounds what is read of one manifest record.
	maxManifestRecord = 1 << 20
)

// manifestKey is what a manifest record is stored under: the module's
// bytes (their SHA-256) and everything of cfg its description may depend
// on — its configuration, whether it is trusted, its grants and the values
// of the environment variables they pass it.
func manifestKey(engine string, sum [sha256.Size]byte, cfg ModuleConfig) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(manifestDomain))
	field := func(b []byte) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field([]byte(engine))
	field(sum[:])
	field(cfg.Config)
	grants, _ := json.Marshal(struct {
		Trusted bool
		Grants  Grants
		Env     map[string]*string
	}{cfg.Trusted, cfg.Grants, envValues(cfg.Grants.Env)})
	field(grants)
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

// envValues are the values of the environment variables names, nil for
// one that is not set.
func envValues(names []string) map[string]*string {
	if len(names) == 0 {
		return nil
	}
	vs := map[string]*string{}
	for _, n := range names {
		if v, ok := os.LookupEnv(n); ok {
			vs[n] = &v
		} else {
			vs[n] = nil
		}
	}
	return vs
}

func (c *diskCache) manifestPath(key [sha256.Size]byte) string {
	return filepath.Join(c.dir, "manifest-"+hex.EncodeToString(key[:]))
}

// manifestMAC is the MAC of a manifest record: its key and its content.
func (c *diskCache) manifestMAC(key [sha256.Size]byte, content []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(manifestDomain))
	m.Write(key[:])
	m.Write(content)
	return m.Sum(nil)
}

// manifest returns the manifest recorded under key, if there is one that
// passes its checks; a record that fails any is discarded.
func (c *diskCache) manifest(key [sha256.Size]byte) (abi.Manifest, bool) {
	p := c.manifestPath(key)
	b, err := readOwnFile(p, 0o022, maxManifestRecord)
	if errors.Is(err, fs.ErrNotExist) {
		return abi.Manifest{}, false
	}
	var m abi.Manifest
	if err == nil {
		if len(b) < sha256.Size || !hmac.Equal(b[:sha256.Size], c.manifestMAC(key, b[sha256.Size:])) {
			err = errors.New("manifest record fails its MAC")
		} else if m, err = abi.ParseManifest(b[sha256.Size:]); err != nil {
			err = fmt.Errorf("manifest record: %w", err)
		}
	}
	if err != nil {
		c.discard(p, err)
		return abi.Manifest{}, false
	}
	return m, true
}

// putManifest records m under key: a new 0600 file, renamed into place.
func (c *diskCache) putManifest(key [sha256.Size]byte, m abi.Manifest) error {
	content, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return c.writeFile(".manifest-*", c.manifestPath(key), append(c.manifestMAC(key, content), content...))
}

// CachedManifest reads the module of cfg — from cfg.Path unless given as
// cfg.Wasm, within its size cap, checked against its sha256 pin, the way
// Load reads it — and returns its bytes, and the manifest the module
// described itself with when these bytes were last loaded with this
// configuration, if the compilation cache on disk holds that record
// (authenticated with its key; a record that fails the check is
// discarded). Nothing of the module is compiled or run. Passing the bytes
// back as cfg.Wasm to Load reads the file once.
//
// The record only foretells: a caller that acts on it must check that the
// Module Load returns has the same manifest.
func (h *Host) CachedManifest(cfg ModuleConfig) (wasm []byte, m abi.Manifest, ok bool, err error) {
	wasm, err = readPinned(cfg)
	if err != nil {
		return nil, abi.Manifest{}, false, loadError(ModuleName(cfg), "%w", err)
	}
	if h.disk == nil {
		return wasm, abi.Manifest{}, false, nil
	}
	m, ok = h.disk.manifest(manifestKey(h.disk.engine, sha256.Sum256(wasm), cfg))
	return wasm, m, ok, nil
}

// rememberManifest records what the module of cfg, whose bytes are wasm,
// described itself as; a failure to write is logged and otherwise
// harmless.
func (h *Host) rememberManifest(cfg ModuleConfig, wasm []byte, m abi.Manifest) {
	if h.disk == nil {
		return
	}
	key := manifestKey(h.disk.engine, sha256.Sum256(wasm), cfg)
	if old, ok := h.disk.manifest(key); ok && SameManifest(old, m) {
		return
	}
	if err := h.disk.putManifest(key, m); err != nil {
		h.logger.Warn("wasm: compilation cache: cannot record a module's manifest", "dir", h.disk.dir, "error", err.Error())
	}
}

// SameManifest reports whether a and b declare the same: what a module
// described itself as, and what CachedManifest foretold.
func SameManifest(a, b abi.Manifest) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}
