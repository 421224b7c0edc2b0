package wasm

import (
	"os"
	"syscall"
	"unsafe"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// utimeOmit is Linux's UTIME_OMIT: utimensat leaves that time as it is.
const utimeOmit = (1 << 30) - 2

// futimens sets a file's times with utimensat on its descriptor and a NULL
// path, so no path is resolved at all.
func futimens(f *os.File, atim, mtim int64) experimentalsys.Errno {
	var ts [2]syscall.Timespec
	for i, t := range [2]int64{atim, mtim} {
		if t == experimentalsys.UTIME_OMIT {
			ts[i] = syscall.Timespec{Nsec: utimeOmit}
		} else {
			ts[i] = syscall.NsecToTimespec(t)
		}
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return errno(err)
	}
	var e1 syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, e1 = syscall.Syscall6(syscall.SYS_UTIMENSAT, fd, 0, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	}); err != nil {
		return errno(err)
	}
	if e1 != 0 {
		return errno(e1)
	}
	return 0
}
