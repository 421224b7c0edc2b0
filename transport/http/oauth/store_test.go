package oauth

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFileStore(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "oauth")
	s, err := NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	const key = "https://mcp.example.com/mcp"
	if g, err := s.Load(ctx, key); g != nil || err != nil {
		t.Fatalf("empty store Load = %v, %v", g, err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatal("the directory was created before a grant was saved")
	}
	want := &Grant{Resource: key, Issuer: "https://as.example", ClientID: "c", AccessToken: "at-secret", RefreshToken: "rt-secret",
		Expiry: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), Scopes: []string{"a", "b"}}
	if err := s.Save(ctx, key, want); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("store dir mode %v, %v; want 0700", fi.Mode().Perm(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("%d files in the store, want 1", len(entries))
	}
	name := entries[0].Name()
	if strings.Contains(name, "mcp.example") {
		t.Errorf("file name %q contains the server URL", name)
	}
	fi, _ = os.Stat(filepath.Join(dir, name))
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("grant file mode %v, want 0600", fi.Mode().Perm())
	}
	got, err := s.Load(ctx, key)
	if err != nil || got.AccessToken != "at-secret" || got.Server != key || !got.Expiry.Equal(want.Expiry) || strings.Join(got.Scopes, " ") != "a b" {
		t.Fatalf("Load = %+v, %v", got, err)
	}
	// A file others can read is refused.
	os.Chmod(filepath.Join(dir, name), 0o644)
	if _, err := s.Load(ctx, key); err == nil || !strings.Contains(err.Error(), "others") {
		t.Errorf("world-readable file: err = %v", err)
	}
	os.Chmod(filepath.Join(dir, name), 0o600)
	if err := s.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if g, _ := s.Load(ctx, key); g != nil {
		t.Error("grant survived Delete")
	}
	// A symbolic link in place of a grant is not followed.
	secret := filepath.Join(t.TempDir(), "target")
	os.WriteFile(secret, []byte(`{"server":"`+key+`"}`), 0o600)
	os.Symlink(secret, s.path(key))
	if _, err := s.Load(ctx, key); err == nil {
		t.Error("symbolic link followed")
	}
}

func TestFileStoreTightensDirectory(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	s, err := NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(context.Background(), "k", &Grant{}); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(dir)
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v, want 0700", fi.Mode().Perm())
	}
}

// The transport keeps its grant in the store, and a new transport (a new
// run of the command line) uses it without authorizing again.
func TestFileStoreAcrossTransports(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	s, err := NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c1, _ := newTestClient(t, Config{Store: s})
	mustOK(t, c1, rs.url(), "x")
	c2, _ := newTestClient(t, Config{Store: s})
	mustOK(t, c2, rs.url(), "y")
	if as.count("auth") != 1 || as.count("reg") != 1 {
		t.Errorf("%d authorizations, %d registrations; want 1 each", as.count("auth"), as.count("reg"))
	}
}

func TestGrantIsRedactedWhenPrinted(t *testing.T) {
	g := &Grant{AccessToken: "at-secret", RefreshToken: "rt-secret", ClientSecret: "cs-secret"}
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Info("x", "grant", g)
	for _, s := range []string{fmt.Sprint(g), fmt.Sprintf("%v", g), b.String()} {
		if strings.Contains(s, "secret") {
			t.Errorf("secret printed: %s", s)
		}
	}
}

func TestMemoryStoreCopies(t *testing.T) {
	var s MemoryStore
	g := &Grant{Scopes: []string{"a"}}
	s.Save(context.Background(), "k", g)
	g.Scopes[0] = "changed"
	got, _ := s.Load(context.Background(), "k")
	if got.Scopes[0] != "a" {
		t.Error("MemoryStore shares the caller's slice")
	}
}
