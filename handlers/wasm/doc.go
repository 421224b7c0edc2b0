// Package wasm is Snodo's WebAssembly host: it loads handler modules that
// follow the ABI of package abi (abi/ABI.md) and runs them on wazero, in a
// sandbox that grants nothing by default.
//
// A Host owns the wazero runtimes and the on-disk compilation cache; Load
// compiles a module once, checks it against the ABI and returns a *Module,
// which answers server requests (HandleRequest, the client's handler
// interface), consumes progress notifications (ProgressFunc) and
// subscription events (ConsumeEvent). Each Module keeps a pool of instances,
// created on demand up to its instance limit; an instance runs one call at a
// time and is thrown away after any failure.
//
// Every failure of a call — a trap, a panic, proc_exit, running out of
// memory, invalid output, the deadline — is a *jsonrpc.Error of kind
// handler with code -32603 whose message names the module and the cause.
//
// The compilation cache (HostConfig.CacheDir) is trusted no further than
// its MAC: each compiled module is stored with an HMAC-SHA256 under a key
// of the user's (HostConfig.CacheKeyFile, kept outside the cache), wazero
// only ever reads bytes that passed it, from a directory private to the
// Host, and an entry that fails is removed, logged at warn and compiled
// again (cache.go). NewHost refuses a cache directory or key file that
// someone other than the user or root owns or that others can write
// (*UnsafeCacheError).
//
// Mounts are confined with Go's os.Root (rootFS): no "..", no symlink —
// made by the guest or already there — resolves outside a mounted
// directory, and a read-only mount refuses every change with EROFS. Only
// regular files and directories open: a FIFO, a socket or a device (or a
// symlink to one) is EACCES, and no open waits. Module
// files are read with ReadModuleFile: regular files only, at most
// ModuleConfig.MaxModuleBytes. HostConfig.MaxTotalMemory bounds the linear
// memory of all of a Host's instances together. Guest text bound for logs
// and errors goes through SanitizeText.
//
// Before anything compiles a module, scanModule (bounds.go) checks what it
// names against ModuleConfig.Limits, and an untrusted module is validated
// before it is instrumented. Tables count in the module's MemoryLimit.
// With HostConfig.CompileIn, a module missing from the cache compiles in a
// child process (the program run again; its main calls ServeCompile),
// killed past its time or memory bound (compilechild.go).
//
// No host call waits past the call (hostcalls.go): WASI is wazero's, with
// poll_oneoff wrapped so that the sleep of a module granted the clock is
// slept on the call's context — the deadline, the caller's context and
// Module.Close (Host.Close) end it, and the call with it, trusted module or
// not. Module.Close cancels every instance's context, so calls in flight
// are stopped ("module closed during the call").
//
// A module that is not trusted is stopped at its deadline, or when its
// caller's context ends, by checks Snodo instruments into it at load
// (interrupt.go): a fuel counter decremented at every function entry and
// loop header, which calls back into Go once every 65,536 checks, or at the
// next check once the deadline fired. Those calls are also where the Go
// runtime can preempt a spinning guest, so that a garbage collection never
// waits long for one. A module the instrumentation does not take (a start
// section, instructions beyond WebAssembly 2.0) runs under wazero's
// close-on-context-done instead, which costs a goroutine per guest call and
// a call into Go at every loop header.
//
// Note: wazero's memory page limit and its close-on-context-done switch are
// settings of a wazero.Runtime, not of a module. The Host keeps one runtime
// per distinct (memory limit, close-on-context-done) pair among the modules
// it loads, all sharing one compilation cache, so each module gets exactly
// its own limit.
package wasm
