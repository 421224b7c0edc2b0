package interop

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// roleEnv selects what a re-executed test binary is.
const roleEnv = "SNODO_INTEROP_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "gosdk-modern":
		os.Exit(runGoSDKServer(false))
	case "gosdk-legacy":
		os.Exit(runGoSDKServer(true))
	case "tee":
		os.Exit(runTee())
	}
	goleak.VerifyTestMain(m)
}
