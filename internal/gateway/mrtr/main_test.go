package mrtr

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test's connections, servers and processes are gone when it ends.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
