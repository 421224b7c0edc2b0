package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Grant is what Snodo keeps about one MCP server (one resource): the
// authorization server that issued the token, the client registration
// obtained from it, and the token.
//
// Note: a Grant holds secrets. Its String and LogValue methods redact them,
// but a Grant must never be written anywhere except a [TokenStore].
type Grant struct {
	// Server is the canonical URI of the MCP server, the key the grant is
	// stored under.
	Server string `json:"server"`
	// Resource is the resource indicator (RFC 8707) the token was requested
	// for: the resource of the server's Protected Resource Metadata.
	Resource string `json:"resource"`
	// Issuer is the authorization server that issued the token and the
	// client registration; both are discarded when the MCP server moves to
	// another authorization server.
	Issuer string `json:"issuer"`
	// ClientID is the client the token was issued to. ClientSecret and
	// AuthMethod are kept only for a client obtained by Dynamic Client
	// Registration (Registered); a pre-registered client's secret stays in
	// [Config].
	ClientID     string `json:"client_id,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
	AuthMethod   string `json:"token_endpoint_auth_method,omitempty"`
	Registered   bool   `json:"registered,omitempty"`
	// RedirectURL is the redirect URI the registration was made for.
	RedirectURL string `json:"redirect_uri,omitempty"`
	// AccessToken, RefreshToken and Expiry are the token; Expiry is zero
	// when the server did not say.
	AccessToken  string    `json:"access_token,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// Scopes are the scopes requested for (or granted to) the token; a
	// step-up authorization requests their union with the challenged ones.
	Scopes []string `json:"scopes,omitempty"`
}

// String describes g without its secrets.
func (g *Grant) String() string {
	if g == nil {
		return "<nil grant>"
	}
	return fmt.Sprintf("grant{server=%q issuer=%q client=%q token=%s refresh=%s expiry=%s scopes=%q}",
		g.Server, g.Issuer, g.ClientID, redacted(g.AccessToken), redacted(g.RefreshToken), g.Expiry.Format(time.RFC3339), g.Scopes)
}

// LogValue makes log/slog print g without its secrets.
func (g *Grant) LogValue() slog.Value { return slog.StringValue(g.String()) }

func redacted(s string) string {
	if s == "" {
		return "none"
	}
	return "[redacted]"
}

// clone returns a deep copy of g, so that stores never share slices with
// their callers.
func (g *Grant) clone() *Grant {
	if g == nil {
		return nil
	}
	c := *g
	c.Scopes = append([]string(nil), g.Scopes...)
	return &c
}

// TokenStore keeps grants, keyed by the canonical URI of the MCP server
// (its URL with lower-case scheme and host, without query, fragment or
// trailing slash).
// Implementations must be safe for concurrent use.
type TokenStore interface {
	// Load returns the grant stored under server, or nil and no error
	// when there is none.
	Load(ctx context.Context, server string) (*Grant, error)
	// Save stores g under server, replacing any previous grant.
	Save(ctx context.Context, server string, g *Grant) error
	// Delete removes the grant stored under server, if any.
	Delete(ctx context.Context, server string) error
}

// MemoryStore is a TokenStore that keeps grants in memory for the life of
// the process. The zero value is ready to use.
type MemoryStore struct {
	mu     sync.Mutex
	grants map[string]*Grant
}

// Load implements TokenStore.
func (s *MemoryStore) Load(_ context.Context, server string) (*Grant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grants[server].clone(), nil
}

// Save implements TokenStore.
func (s *MemoryStore) Save(_ context.Context, server string, g *Grant) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.grants == nil {
		s.grants = map[string]*Grant{}
	}
	s.grants[server] = g.clone()
	return nil
}

// Delete implements TokenStore.
func (s *MemoryStore) Delete(_ context.Context, server string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.grants, server)
	return nil
}

// FileStore is a TokenStore that keeps one JSON file per MCP server in a
// directory only the user can read: the directory is made mode 0700 when a
// grant is first saved, and each file mode 0600 (written to a temporary file and renamed, so
// a reader never sees half a file). A file that is readable or writable by
// group or others is refused rather than trusted. File names are the SHA-256
// of the server URI, so no part of a name comes from a server.
type FileStore struct {
	dir string
	mu  sync.Mutex
}

// maxGrantFile bounds a stored grant file.
const maxGrantFile = 64 << 10

// NewFileStore returns a FileStore in dir; an empty dir means
// DefaultFileStoreDir. The directory is created (mode 0700) by the first
// Save, so a program that never needs a grant leaves no trace.
func NewFileStore(dir string) (*FileStore, error) {
	if dir == "" {
		d, err := DefaultFileStoreDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	return &FileStore{dir: dir}, nil
}

// ensureDir creates the directory with mode 0700, or tightens an existing
// one to 0700.
func (s *FileStore) ensureDir() error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	fi, err := os.Lstat(s.dir)
	if err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("oauth: token store %q is not a directory", s.dir)
	}
	if checkModes && fi.Mode().Perm()&0o077 != 0 {
		// The directory is ours (MkdirAll or the user made it); close it.
		if err := os.Chmod(s.dir, 0o700); err != nil {
			return fmt.Errorf("oauth: token store %q is accessible by others and cannot be restricted: %w", s.dir, err)
		}
	}
	return nil
}

// DefaultFileStoreDir returns the directory the command line keeps grants
// in: "snodo/oauth" under the user's cache directory (os.UserCacheDir).
func DefaultFileStoreDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("oauth: token store: %w", err)
	}
	return filepath.Join(d, "snodo", "oauth"), nil
}

// Dir returns the directory the store writes to.
func (s *FileStore) Dir() string { return s.dir }

func (s *FileStore) path(server string) string {
	sum := sha256.Sum256([]byte(server))
	return filepath.Join(s.dir, hex.EncodeToString(sum[:16])+".json")
}

// Load implements TokenStore.
func (s *FileStore) Load(_ context.Context, server string) (*Grant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.path(server)
	f, err := os.OpenFile(p, os.O_RDONLY|nofollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("oauth: token store: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("oauth: token store: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("oauth: token store: %q is not a regular file", p)
	}
	if checkModes && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("oauth: token store: %q has mode %v, which others can access; refusing it (remove the file to authorize again)", p, fi.Mode().Perm())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxGrantFile+1))
	if err != nil {
		return nil, fmt.Errorf("oauth: token store: %w", err)
	}
	if len(data) > maxGrantFile {
		return nil, fmt.Errorf("oauth: token store: %q is larger than %d bytes", p, maxGrantFile)
	}
	var g Grant
	if err := json.Unmarshal(data, &g); err != nil {
		return nil, fmt.Errorf("oauth: token store: %q is not a grant: %w", p, err)
	}
	if g.Server != server {
		// A hash collision or a file copied by hand: not this server's.
		return nil, nil
	}
	return &g, nil
}

// Save implements TokenStore.
func (s *FileStore) Save(_ context.Context, server string, g *Grant) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ensureDir(); err != nil {
		return err
	}
	c := g.clone()
	c.Server = server
	data, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	f, err := os.CreateTemp(s.dir, ".grant-*") // mode 0600
	if err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	if err := os.Rename(tmp, s.path(server)); err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	ok = true
	return nil
}

// Delete implements TokenStore.
func (s *FileStore) Delete(_ context.Context, server string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := os.Remove(s.path(server))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	return nil
}
