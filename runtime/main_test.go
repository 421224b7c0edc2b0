package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	runHelper()
	home, err := isolateUserDirs()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(home)
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// isolateUserDirs points the user's cache and configuration directories
// at a new directory, so that the tests' Wasm compilation cache and its
// key (handlers/wasm) are not the user's. Go's build cache, which the
// tests' module builds use, stays where it was.
func isolateUserDirs() (string, error) {
	if os.Getenv("GOCACHE") == "" {
		if dir, err := os.UserCacheDir(); err == nil {
			os.Setenv("GOCACHE", filepath.Join(dir, "go-build"))
		}
	}
	home, err := os.MkdirTemp("", "snodo-runtime-test-")
	if err != nil {
		return "", err
	}
	for env, sub := range map[string]string{"XDG_CACHE_HOME": "cache", "XDG_CONFIG_HOME": "config"} {
		p := filepath.Join(home, sub)
		if err := os.MkdirAll(p, 0o700); err != nil {
			return "", err
		}
		os.Setenv(env, p)
	}
	return home, nil
}
