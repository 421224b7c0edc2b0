package policy

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them (a JWKS
// fetch, a test server).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
