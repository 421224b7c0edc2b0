package wasm

import (
	"encoding/json"
	"time"
)

// ModuleConfig says which module to load and what it may do. The zero
// values of the limits mean the defaults of package abi; the zero Grants
// grant nothing.
type ModuleConfig struct {
	// Name names the module in errors and logs. "" means the base name of
	// Path without ".wasm".
	Name string
	// Path is the module file. Wasm, when set, is used instead.
	Path string
	Wasm []byte

	// SHA256 pins the module's bytes: the lowercase or uppercase hex SHA-256
	// digest. Load refuses a module that does not match. "" pins nothing.
	SHA256 string

	// Config is the JSON the guest reads with the config import; nil is
	// given to the guest as null.
	Config json.RawMessage

	// Timeout is each call's deadline (default 5 s).
	Timeout time.Duration

	// Trusted runs the module as it is, without the checks that stop it at
	// its deadline (interrupt.go), which makes loop-heavy guest code a
	// little faster (see BENCHMARKS.md) but means a call cannot be stopped:
	// the deadline is checked only when the call returns (a sleep in
	// poll_oneoff excepted, which is cut as any module's), and a trusted
	// module that loops hangs its caller, and the process at its next
	// garbage collection.
	Trusted bool

	// MemoryLimit caps each instance's memory, in bytes, rounded up to
	// 64 KiB pages (default 128 MiB, at most 4 GiB): its linear memory and
	// its tables together. The tables' share is their elements at their
	// maximum (8 bytes each, rounded up to pages); memory.grow stops at
	// the rest.
	MemoryLimit int64

	// Limits bound what the module can name — functions, locals, table
	// elements, globals, segments, code size — checked before it is
	// compiled. The zero value means DefaultLimits.
	Limits Limits

	// MaxInstances caps the instances alive at once, and so the calls
	// running at once (default 16). A call waits for a free instance.
	MaxInstances int

	// MaxOutput caps the bytes of one call's output (default 8 MiB).
	MaxOutput int

	// MaxModuleBytes caps the size of the module, read from Path or given
	// as Wasm (default DefaultMaxModuleBytes, 64 MiB). A module file must
	// be a regular file (see ReadModuleFile).
	MaxModuleBytes int64

	// Grants is what the sandbox lets through.
	Grants Grants
}

// Grants is what a module may reach beyond its own memory. The zero value
// grants nothing: no files, no environment, no real clocks, deterministic
// random bytes.
type Grants struct {
	// Mounts are host directories visible to the guest.
	Mounts []Mount
	// Env names environment variables passed to the guest, with their
	// values in this process's environment when the module loads. Unset
	// variables are left out.
	Env []string
	// Clock grants the real wall clock, monotonic clock and sleep
	// (poll_oneoff), a sleep the call's deadline and context cut.
	Clock bool
	// Random grants a cryptographic random source (crypto/rand).
	Random bool
}

// Mount is a host directory mounted in the guest's filesystem.
type Mount struct {
	HostDir   string
	GuestPath string // "" means "/"
	ReadOnly  bool
}
