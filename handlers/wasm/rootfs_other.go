//go:build !linux

package wasm

import (
	"os"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// futimens through a descriptor is implemented on Linux only; elsewhere a
// guest sets times by path (rootFS.Utimens).
func futimens(*os.File, int64, int64) experimentalsys.Errno { return experimentalsys.ENOSYS }
