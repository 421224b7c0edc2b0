package interop

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/snodo/snodo/internal/interop/gosdkserver"
)

// roleEnv selects what a re-executed test binary is.
const roleEnv = "SNODO_INTEROP_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "gosdk-modern":
		os.Exit(gosdkserver.Run(false))
	case "gosdk-legacy":
		os.Exit(gosdkserver.Run(true))
	case "gosdk-modern-cached":
		os.Exit(gosdkserver.RunCacheable(false, 600000))
	case "gosdk-legacy-cached":
		os.Exit(gosdkserver.RunCacheable(true, 600000))
	case "gosdk-legacy-only-versions":
		os.Exit(gosdkserver.RunVersions([]string{"2025-11-25", "2025-06-18"}))
	case "tee":
		os.Exit(runTee())
	}
	goleak.VerifyTestMain(m)
}
