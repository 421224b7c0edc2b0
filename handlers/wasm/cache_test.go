package wasm

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// swapAnswers are the two answers of the modules swapModule makes: both
// sit in each module's data; only an i32.const in the code picks one.
var swapAnswers = [2]string{
	`{"action":"accept","content":{"m":"A"}}`,
	`{"action":"accept","content":{"m":"B"}}`,
}

// swapModule returns module A (which = 0) or B (1): the same module but for
// the offset its snodo_handle answers from, so that A's compiled code and
// B's differ and nothing else does.
func swapModule(t testing.TB, which int) []byte {
	t.Helper()
	manifest := `{\"abi\":1,\"name\":\"swap\",\"methods\":[\"elicitation/create\"]}`
	manifestLen := len(`{"abi":1,"name":"swap","methods":["elicitation/create"]}`)
	return watModule(t, fmt.Sprintf(`(module
  (import "snodo" "set_output" (func $set_output (param i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 16) "%s")
  (data (i32.const 1024) %q)
  (data (i32.const 2048) %q)
  (func (export "_initialize"))
  (func (export "snodo_describe") (result i32)
    (call $set_output (i32.const 16) (i32.const %d))
    (i32.const 0))
  (func (export "snodo_alloc") (param $n i32) (result i32)
    (local $pages i32)
    (local.set $pages
      (i32.add (i32.const 1)
        (i32.shr_u (i32.add (local.get $n) (i32.const 65535)) (i32.const 16))))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size))) (i32.const -1))
          (then (return (i32.const 0))))))
    (i32.const 65536))
  (func (export "snodo_handle") (param i32 i32) (result i32)
    (call $set_output (i32.const %d) (i32.const %d))
    (i32.const 0)))`, manifest, swapAnswers[0], swapAnswers[1], manifestLen, 1024+1024*which, len(swapAnswers[which])))
}

// cacheFiles returns the regular files under dir, by path, validation
// and manifest records aside.
func cacheFiles(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), "valid-") && !strings.HasPrefix(d.Name(), "manifest-") {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files[p] = b
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// cacheCase is a cache directory and a key file of a test's own, and the
// warnings the hosts made with them logged.
type cacheCase struct {
	dir, keyFile string
	log          syncBuffer
}

func newCacheCase(t testing.TB) *cacheCase {
	base := t.TempDir()
	return &cacheCase{dir: filepath.Join(base, "cache"), keyFile: filepath.Join(base, "config", "cache.key")}
}

func (c *cacheCase) host(t testing.TB) (*Host, error) {
	t.Helper()
	return NewHost(HostConfig{CacheDir: c.dir, CacheKeyFile: c.keyFile, Logger: newJSONLogger(&c.log)})
}

// answer loads module which (swapModule) in a new host of the case and
// returns its answer.
func (c *cacheCase) answer(t testing.TB, which int) string {
	t.Helper()
	h, err := c.host(t)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	m := load(t, h, ModuleConfig{Name: "swap", Wasm: swapModule(t, which)})
	res, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("which?"))
	if err != nil {
		t.Fatal(err)
	}
	return string(res)
}

// entry loads module A once and returns the path of its store entry.
func (c *cacheCase) entry(t testing.TB) string {
	t.Helper()
	if got := c.answer(t, 0); got != swapAnswers[0] {
		t.Fatalf("A answers %s, want %s", got, swapAnswers[0])
	}
	files := cacheFiles(t, c.dir)
	if len(files) != 1 {
		t.Fatalf("%d files in the cache after one module, want 1", len(files))
	}
	for p := range files {
		return p
	}
	panic("unreachable")
}

// wantDiscarded checks that the entry at p was refused and logged, and
// that module A, compiled afresh, answered as A.
func (c *cacheCase) wantDiscarded(t testing.TB, p, reason string) {
	t.Helper()
	if got := c.answer(t, 0); got != swapAnswers[0] {
		t.Fatalf("A answers %s with a bad cache entry: it ran code it did not hash", got)
	}
	var found bool
	for line := range bytes.Lines(c.log.Bytes()) {
		var rec struct{ Level, Msg, Path, Reason string }
		if json.Unmarshal(line, &rec) == nil && rec.Level == "WARN" && rec.Path == p &&
			strings.Contains(rec.Msg, "refused and removed") && strings.Contains(rec.Reason, reason) {
			found = true
		}
	}
	if !found {
		t.Fatalf("no warning that %s was refused (%q); log:\n%s", p, reason, c.log.Bytes())
	}
}

// Whoever can write the cache swaps another module's compiled code in for
// a module's: the module still runs its own code, and the swapped entry
// is thrown away. (wazero's own cache, which Snodo used to give the cache
// directory, ran B's code here: its files are checked by a CRC only.)
func TestCacheSwappedEntryDoesNotRunAnotherModulesCode(t *testing.T) {
	c := newCacheCase(t)
	if got := c.answer(t, 0); got != swapAnswers[0] {
		t.Fatalf("A answers %s, want %s", got, swapAnswers[0])
	}
	filesA := cacheFiles(t, c.dir)
	if got := c.answer(t, 1); got != swapAnswers[1] {
		t.Fatalf("B answers %s, want %s", got, swapAnswers[1])
	}
	filesB := cacheFiles(t, c.dir)
	var pathA, pathB string
	for p := range filesB {
		if _, ok := filesA[p]; ok {
			pathA = p
		} else {
			pathB = p
		}
	}
	if len(filesA) != 1 || len(filesB) != 2 || pathA == "" || pathB == "" {
		t.Fatalf("cache files: %d after A, %d after A and B; want one per module", len(filesA), len(filesB))
	}
	if err := os.WriteFile(pathA, filesB[pathB], 0o600); err != nil {
		t.Fatal(err)
	}
	c.wantDiscarded(t, pathA, "MAC does not match")
	after := cacheFiles(t, c.dir)
	if bytes.Equal(after[pathA], filesB[pathB]) || !bytes.Equal(after[pathA], filesA[pathA]) {
		t.Fatalf("the swapped entry %s was not replaced by A's own", pathA)
	}
}

// A second host reads the entry the first one stored, and leaves it as it
// is: wazero used the code it was given and compiled nothing.
func TestCacheEntryIsUsedByTheNextHost(t *testing.T) {
	c := newCacheCase(t)
	p := c.entry(t)
	before, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.answer(t, 0); got != swapAnswers[0] {
		t.Fatalf("A answers %s, want %s", got, swapAnswers[0])
	}
	after, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Fatal("the entry was written again: the cached code was not used")
	}
	if before.Mode().Perm() != 0o600 {
		t.Fatalf("entry mode %v, want 0600", before.Mode().Perm())
	}
	if bytes.Contains(c.log.Bytes(), []byte(`"WARN"`)) {
		t.Fatalf("warnings for a good entry:\n%s", c.log.Bytes())
	}
	// The private directory given to wazero is gone with its host.
	ents, _ := os.ReadDir(c.dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), privatePrefix) {
			t.Fatalf("private directory %s left after Close", e.Name())
		}
	}
}

// An entry changed in any way, cut short, or not an entry at all is
// removed with a warning and the module compiled afresh.
func TestCacheTamperedEntryIsDiscarded(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		change       func([]byte) []byte
	}{
		{"forged MAC", "MAC does not match", func(b []byte) []byte { b[len(entryMagic)] ^= 1; return b }},
		{"changed code", "MAC does not match", func(b []byte) []byte { b[len(b)-100] ^= 0x80; return b }},
		{"truncated", "MAC does not match", func(b []byte) []byte { return b[:len(b)/2] }},
		{"cut in its header", "bad header", func(b []byte) []byte { return b[:entryHeader-1] }},
		{"name length past the end", "truncated", func(b []byte) []byte { return b[:entryHeader+10] }},
		{"empty", "bad header", func([]byte) []byte { return nil }},
		{"not an entry", "bad header", func(b []byte) []byte { return bytes.Repeat([]byte("x"), len(b)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCacheCase(t)
			p := c.entry(t)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, tc.change(b), 0o600); err != nil {
				t.Fatal(err)
			}
			c.wantDiscarded(t, p, tc.reason)
		})
	}
}

// An entry whose MAC is right (made with the key) but whose file name
// would leave wazero's directory is refused: nothing is written outside.
func TestCacheEntryWithAPathForANameIsDiscarded(t *testing.T) {
	for _, name := range []string{"../../escape", "a/b", "..", "/tmp/escape", strings.Repeat("A", 64), strings.Repeat("0", 63) + "/"} {
		t.Run(name, func(t *testing.T) {
			c := newCacheCase(t)
			p := c.entry(t)
			key, err := os.ReadFile(c.keyFile)
			if err != nil {
				t.Fatal(err)
			}
			var ek [32]byte
			if _, err := hex.Decode(ek[:], []byte(filepath.Base(p))); err != nil {
				t.Fatal(err)
			}
			dc := &diskCache{key: key}
			if err := os.WriteFile(p, dc.seal(ek, name, []byte("not native code")), 0o600); err != nil {
				t.Fatal(err)
			}
			before := cacheFiles(t, filepath.Dir(c.dir))
			c.wantDiscarded(t, p, "is not wazero's")
			after := cacheFiles(t, filepath.Dir(c.dir))
			for f := range after {
				if _, ok := before[f]; !ok {
					t.Errorf("new file %s", f)
				}
			}
			if _, err := os.Lstat("/tmp/escape"); err == nil && name == "/tmp/escape" {
				t.Error("/tmp/escape was written")
			}
		})
	}
}

// An entry others can write, one owned by someone else, and a symbolic
// link (to a good entry, even) are refused and removed; the link's target
// is left alone.
func TestCacheEntryNotTheUsersAloneIsDiscarded(t *testing.T) {
	t.Run("writable by others", func(t *testing.T) {
		c := newCacheCase(t)
		p := c.entry(t)
		if err := os.Chmod(p, 0o666); err != nil {
			t.Fatal(err)
		}
		c.wantDiscarded(t, p, "gives others access")
	})
	t.Run("owned by someone else", func(t *testing.T) {
		c := newCacheCase(t)
		p := c.entry(t)
		chownOrSkip(t, p, otherUID)
		c.wantDiscarded(t, p, "owned by uid 54321")
	})
	t.Run("symbolic link", func(t *testing.T) {
		c := newCacheCase(t)
		p := c.entry(t)
		outside := filepath.Join(t.TempDir(), "outside")
		good, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(outside, good, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, p); err != nil {
			t.Fatal(err)
		}
		c.wantDiscarded(t, p, "")
		if b, err := os.ReadFile(outside); err != nil || !bytes.Equal(b, good) {
			t.Fatalf("the link's target was changed: %v", err)
		}
		if fi, err := os.Lstat(p); err != nil || fi.Mode()&fs.ModeSymlink != 0 {
			t.Fatalf("entry %s is still a link (%v)", p, err)
		}
	})
}

const otherUID = 54321

// chownOrSkip gives p to uid; only root can, and the tests run as root.
func chownOrSkip(t *testing.T, p string, uid int) {
	t.Helper()
	if err := os.Lchown(p, uid, uid); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("cannot give %s to another user without root: %v", p, err)
		}
		t.Fatal(err)
	}
}

// wantUnsafe checks that err is an *UnsafeCacheError naming path and
// containing parts.
func wantUnsafe(t *testing.T, err error, path string, parts ...string) {
	t.Helper()
	var ue *UnsafeCacheError
	if !errors.As(err, &ue) {
		t.Fatalf("error %v (%T), want an *UnsafeCacheError", err, err)
	}
	if !strings.HasPrefix(ue.Path, path) {
		t.Fatalf("refused %q, want %q", ue.Path, path)
	}
	for _, p := range append(parts, path, "refusing it") {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not contain %q", err, p)
		}
	}
}

// A cache directory, or a directory above it, others can write or that
// someone else owns is refused, saying what is wrong and what to do; a
// sticky directory (such as /tmp) above it is fine.
func TestCacheDirOthersCanChangeIsRefused(t *testing.T) {
	t.Run("writable by all", func(t *testing.T) {
		c := newCacheCase(t)
		if err := os.Mkdir(c.dir, 0o700); err != nil {
			t.Fatal(err)
		}
		os.Chmod(c.dir, 0o777)
		_, err := c.host(t)
		wantUnsafe(t, err, c.dir, "writable by group and others (mode drwxrwxrwx)", "chmod go-w "+c.dir, "--cache-dir")
	})
	t.Run("writable by group", func(t *testing.T) {
		c := newCacheCase(t)
		if err := os.Mkdir(c.dir, 0o700); err != nil {
			t.Fatal(err)
		}
		os.Chmod(c.dir, 0o770)
		_, err := c.host(t)
		wantUnsafe(t, err, c.dir, "writable by group (mode drwxrwx---)")
	})
	t.Run("sticky itself", func(t *testing.T) {
		c := newCacheCase(t)
		if err := os.Mkdir(c.dir, 0o700); err != nil {
			t.Fatal(err)
		}
		os.Chmod(c.dir, 0o777|fs.ModeSticky)
		_, err := c.host(t)
		wantUnsafe(t, err, c.dir, "writable by group and others")
	})
	t.Run("parent writable by all", func(t *testing.T) {
		c := newCacheCase(t)
		parent := filepath.Dir(c.dir)
		os.Chmod(parent, 0o777)
		_, err := c.host(t)
		wantUnsafe(t, err, parent, "(an ancestor of "+c.dir+")", "writable by group and others", "chmod go-w "+parent)
	})
	t.Run("owned by someone else", func(t *testing.T) {
		c := newCacheCase(t)
		if err := os.Mkdir(c.dir, 0o700); err != nil {
			t.Fatal(err)
		}
		chownOrSkip(t, c.dir, otherUID)
		_, err := c.host(t)
		wantUnsafe(t, err, c.dir, "owned by uid 54321, not by you", "a cache directory of your own")
	})
	t.Run("parent owned by someone else", func(t *testing.T) {
		c := newCacheCase(t)
		chownOrSkip(t, filepath.Dir(c.dir), otherUID)
		_, err := c.host(t)
		wantUnsafe(t, err, filepath.Dir(c.dir), "owned by uid 54321")
	})
	t.Run("link to a directory writable by all", func(t *testing.T) {
		c := newCacheCase(t)
		loose := filepath.Join(t.TempDir(), "loose")
		os.Mkdir(loose, 0o700)
		os.Chmod(loose, 0o777)
		if err := os.Symlink(loose, c.dir); err != nil {
			t.Fatal(err)
		}
		_, err := c.host(t)
		wantUnsafe(t, err, loose, "writable by group and others")
	})
	t.Run("link in a directory writable by all", func(t *testing.T) {
		c := newCacheCase(t)
		loose := filepath.Join(t.TempDir(), "loose")
		os.Mkdir(loose, 0o700)
		os.Chmod(loose, 0o777)
		target := filepath.Join(t.TempDir(), "cache")
		os.Mkdir(target, 0o700)
		link := filepath.Join(loose, "cache")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		c.dir = link
		_, err := c.host(t)
		wantUnsafe(t, err, loose, "(an ancestor of "+link+")")
	})
	t.Run("under a sticky directory", func(t *testing.T) {
		c := newCacheCase(t)
		parent := filepath.Dir(c.dir)
		if err := os.Chmod(parent, 0o777|fs.ModeSticky); err != nil {
			t.Fatal(err)
		}
		if got := c.answer(t, 0); got != swapAnswers[0] {
			t.Fatalf("A answers %s", got)
		}
		if got := c.answer(t, 0); got != swapAnswers[0] {
			t.Fatalf("A answers %s from the cache", got)
		}
	})
}

// The key file is made (mode 0600, in a 0700 directory) when missing, and
// refused when others can read or change it, when someone else owns it,
// when it is a symbolic link or not a key.
func TestCacheKeyFileNotTheUsersAloneIsRefused(t *testing.T) {
	t.Run("made private", func(t *testing.T) {
		c := newCacheCase(t)
		c.entry(t)
		fi, err := os.Lstat(c.keyFile)
		if err != nil || fi.Mode() != 0o600 || fi.Size() != cacheKeySize {
			t.Fatalf("key file %v %v, want a 32-byte file of mode 0600", fi, err)
		}
		for _, d := range []string{c.dir, filepath.Dir(c.keyFile)} {
			if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
				t.Fatalf("%s: %v %v, want mode 0700", d, fi, err)
			}
		}
	})
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, keyFile string)
		parts []string
	}{
		{"readable by others", func(t *testing.T, k string) { os.Chmod(k, 0o644) }, []string{"gives others access", "chmod 600 "}},
		{"owned by someone else", func(t *testing.T, k string) { chownOrSkip(t, k, otherUID) }, []string{"owned by uid 54321"}},
		{"too short", func(t *testing.T, k string) { os.Truncate(k, 16) }, []string{"holds 16 bytes", "remove it"}},
		{"too long", func(t *testing.T, k string) { os.WriteFile(k, make([]byte, 64), 0o600) }, []string{"over the 32-byte limit"}},
		{"a symbolic link", func(t *testing.T, k string) {
			other := filepath.Join(t.TempDir(), "key")
			os.WriteFile(other, make([]byte, cacheKeySize), 0o600)
			os.Remove(k)
			os.Symlink(other, k)
		}, []string{"symbolic link"}},
		{"its directory writable by all", func(t *testing.T, k string) { os.Chmod(filepath.Dir(k), 0o777) }, []string{"writable by group and others"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCacheCase(t)
			c.entry(t)
			tc.spoil(t, c.keyFile)
			_, err := c.host(t)
			path := c.keyFile
			if strings.Contains(tc.name, "directory") {
				path = filepath.Dir(c.keyFile)
			}
			wantUnsafe(t, err, path, tc.parts...)
		})
	}
	// Another key makes every entry fail its MAC: a cache directory
	// brought from elsewhere is compiled again, never run.
	t.Run("another key", func(t *testing.T) {
		c := newCacheCase(t)
		p := c.entry(t)
		if err := os.Remove(c.keyFile); err != nil {
			t.Fatal(err)
		}
		c.wantDiscarded(t, p, "MAC does not match")
	})
}

// With no cache directory given, the default one is made with mode 0700.
func TestDefaultCacheDirIsMadePrivate(t *testing.T) {
	xdg := filepath.Join(t.TempDir(), "xdg")
	t.Setenv("XDG_CACHE_HOME", xdg)
	dir, err := DefaultCacheDir()
	if err != nil || dir != filepath.Join(xdg, "snodo", "compiled") {
		t.Fatalf("DefaultCacheDir() = %q, %v", dir, err)
	}
	h, err := NewHost(HostConfig{CacheKeyFile: filepath.Join(t.TempDir(), "key"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	load(t, h, ModuleConfig{Name: "swap", Wasm: swapModule(t, 0)})
	h.Close(context.Background())
	for _, d := range []string{xdg, filepath.Join(xdg, "snodo"), dir} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v, want mode 0700", d, fi, err)
		}
	}
	if n := len(cacheFiles(t, dir)); n != 1 {
		t.Fatalf("%d entries in %s, want 1", n, dir)
	}
}

// The private directory of a host whose process was killed (no Close) is
// removed by a later host once nobody touched it for a day; a recent one,
// perhaps another live host's, is left alone.
func TestCacheStalePrivateDirIsRemoved(t *testing.T) {
	c := newCacheCase(t)
	c.entry(t)
	stale := filepath.Join(c.dir, privatePrefix+"stale")
	recent := filepath.Join(c.dir, privatePrefix+"recent")
	for _, d := range []string{stale, recent} {
		if err := os.MkdirAll(filepath.Join(d, "wazero-x"), 0o700); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "wazero-x", strings.Repeat("0", 64)), []byte("left"), 0o600)
	}
	old := time.Now().Add(-staleAfter - time.Hour)
	for _, p := range []string{filepath.Join(stale, "wazero-x", strings.Repeat("0", 64)), filepath.Join(stale, "wazero-x"), stale} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	h, err := c.host(t)
	if err != nil {
		t.Fatal(err)
	}
	h.Close(context.Background())
	if _, err := os.Lstat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale private directory still there (%v)", err)
	}
	if _, err := os.Lstat(recent); err != nil {
		t.Errorf("recent private directory removed: %v", err)
	}
}
