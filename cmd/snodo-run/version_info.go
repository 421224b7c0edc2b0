package main

import (
	"runtime/debug"

	"github.com/snodo/snodo"
)

func init() {
	if version == "" {
		version = moduleVersion()
	}
}

// moduleVersion is the version of the module snodo-run was built from when
// it was built from a tagged module (go install …@v1.2.3), else Snodo's own
// version constant: one version, which snodo-run version prints and the
// client reports in its clientInfo.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Path == "github.com/snodo/snodo" &&
		bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return snodo.Version
}

// clientInfo is what the client introduces itself as.
func clientInfo() snodo.Implementation {
	return snodo.Implementation{Name: "snodo", Version: version}
}
