//go:build !linux

package runtime

import (
	"fmt"
	"os"
	"syscall"
)

func namespaceAttr(*syscall.SysProcAttr) (*syscall.SysProcAttr, error) {
	return nil, fmt.Errorf("Config.PIDNamespace needs Linux: %w", syscall.ENOSYS)
}

func runInit([]string) int {
	fmt.Fprintln(os.Stderr, "snodo init: PID namespaces need Linux")
	return 127
}
