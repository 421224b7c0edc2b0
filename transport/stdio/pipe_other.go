//go:build !linux

package stdio

// pipeAtomic is POSIX's smallest PIPE_BUF: a write to a pipe of at most
// this many bytes is atomic, so a non-blocking one either writes all or
// nothing.
const pipeAtomic = 512
