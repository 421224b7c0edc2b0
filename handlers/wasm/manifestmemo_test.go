package wasm

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snodo/snodo/abi"
)

// manifestRecord loads module A (swapModule) once in a new host of the
// case and returns the path of the manifest record it left.
func (c *cacheCase) manifestRecord(t *testing.T, cfg ModuleConfig) string {
	t.Helper()
	h, err := c.host(t)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	load(t, h, cfg)
	recs, _ := filepath.Glob(filepath.Join(c.dir, "manifest-*"))
	if len(recs) != 1 {
		t.Fatalf("%d manifest records after one module, want 1", len(recs))
	}
	return recs[0]
}

// cachedManifest asks a new host of the case for cfg's manifest record.
func (c *cacheCase) cachedManifest(t *testing.T, cfg ModuleConfig) (abi.Manifest, bool) {
	t.Helper()
	h, err := c.host(t)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	bin, m, ok, err := h.CachedManifest(cfg)
	if err != nil {
		t.Fatalf("CachedManifest: %v", err)
	}
	if !bytes.Equal(bin, cfg.Wasm) {
		t.Fatal("CachedManifest gave other bytes than the module's")
	}
	return m, ok
}

// What a module described itself as is recorded under its bytes and what
// of its configuration the description may depend on, and CachedManifest
// gives it back; for other bytes, another Config, trust or grants there
// is none.
func TestCachedManifestIsWhatTheModuleDescribed(t *testing.T) {
	c := newCacheCase(t)
	a := ModuleConfig{Name: "swap", Wasm: swapModule(t, 0)}
	if _, ok := c.cachedManifest(t, a); ok {
		t.Fatal("a manifest record before the module was ever loaded")
	}
	c.manifestRecord(t, a)
	got, ok := c.cachedManifest(t, a)
	want := abi.Manifest{ABI: 1, Name: "swap", Methods: []string{"elicitation/create"}}
	if !ok || !SameManifest(got, want) {
		t.Fatalf("CachedManifest = %+v, %v; want %+v, true", got, ok, want)
	}
	for name, other := range map[string]ModuleConfig{
		"other bytes":  {Name: "swap", Wasm: swapModule(t, 1)},
		"other config": {Name: "swap", Wasm: a.Wasm, Config: json.RawMessage(`{"x":1}`)},
		"trusted":      {Name: "swap", Wasm: a.Wasm, Trusted: true},
		"a grant":      {Name: "swap", Wasm: a.Wasm, Grants: Grants{Clock: true}},
	} {
		if m, ok := c.cachedManifest(t, other); ok {
			t.Errorf("%s: CachedManifest foretells %+v from a record of other bytes or configuration", name, m)
		}
	}
}

// A manifest record changed in any way, cut short, made with another key,
// or holding what is not a manifest is refused, removed and logged.
func TestCachedManifestTamperedRecordIsDiscarded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(c *cacheCase, p string, b []byte) []byte
	}{
		{"forged MAC", func(_ *cacheCase, _ string, b []byte) []byte { b[0] ^= 1; return b }},
		{"changed manifest", func(_ *cacheCase, _ string, b []byte) []byte {
			return bytes.Replace(b, []byte(`"elicitation/create"`), []byte(`"sampling/createMessage"`), 1)
		}},
		{"cut short", func(_ *cacheCase, _ string, b []byte) []byte { return b[:20] }},
		{"empty", func(*cacheCase, string, []byte) []byte { return nil }},
		{"another key", func(_ *cacheCase, p string, _ []byte) []byte {
			return sealManifest(t, bytes.Repeat([]byte{7}, cacheKeySize), p, `{"abi":1,"methods":["sampling/createMessage"]}`)
		}},
		{"not a manifest, MAC right", func(c *cacheCase, p string, _ []byte) []byte {
			key, err := os.ReadFile(c.keyFile)
			if err != nil {
				t.Fatal(err)
			}
			return sealManifest(t, key, p, `{"abi":1,"methods":["x"],"run":"this"}`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCacheCase(t)
			a := ModuleConfig{Name: "swap", Wasm: swapModule(t, 0)}
			p := c.manifestRecord(t, a)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, tc.change(c, p, b), 0o600); err != nil {
				t.Fatal(err)
			}
			if m, ok := c.cachedManifest(t, a); ok {
				t.Fatalf("a %s record foretold %+v", tc.name, m)
			}
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Fatalf("the refused record is still there (%v)", err)
			}
			if !strings.Contains(string(c.log.Bytes()), "refused and removed") {
				t.Fatalf("no warning for the refused record:\n%s", string(c.log.Bytes()))
			}
		})
	}
}

// sealManifest returns a manifest record of content for the record at p,
// authenticated with key.
func sealManifest(t *testing.T, key []byte, p, content string) []byte {
	t.Helper()
	var k [32]byte
	if _, err := hex.Decode(k[:], []byte(strings.TrimPrefix(filepath.Base(p), "manifest-"))); err != nil {
		t.Fatal(err)
	}
	dc := &diskCache{key: key}
	return append(dc.manifestMAC(k, []byte(content)), content...)
}

// The module's bytes are checked against their sha256 pin before any
// record is looked up: other bytes are refused, as Load refuses them.
func TestCachedManifestChecksThePinFirst(t *testing.T) {
	c := newCacheCase(t)
	a := ModuleConfig{Name: "swap", Wasm: swapModule(t, 0)}
	c.manifestRecord(t, a)
	h, err := c.host(t)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	a.SHA256 = sha256Hex(swapModule(t, 1))
	_, m, ok, err := h.CachedManifest(a)
	if err == nil || !strings.Contains(err.Error(), "sha256 mismatch") || ok {
		t.Fatalf("CachedManifest with another pin: %+v, %v, %v; want a sha256 mismatch", m, ok, err)
	}
	_, lerr := h.Load(context.Background(), a)
	if lerr == nil || lerr.Error() != err.Error() {
		t.Fatalf("CachedManifest: %v\nLoad: %v\nwant the same error", err, lerr)
	}
}
