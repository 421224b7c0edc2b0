//go:build !wasip1

package guest

import "github.com/snodo/snodo/abi"

// Off wasip1 there is no host: logs go nowhere and the configuration is the
// one given to SetTestConfig.

var testConfig = []byte("null")

// SetTestConfig sets the configuration that Config returns off wasip1, for
// tests of handler logic run natively.
func SetTestConfig(config []byte) {
	testConfig = config
	configCache = nil
}

func hostLog(abi.Level, string) {}

func hostConfig() []byte { return testConfig }
