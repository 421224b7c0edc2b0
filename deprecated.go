package snodo

import "github.com/snodo/snodo/abi"

// Features the 2026-07-28 revision deprecates (deprecated.mdx, "Deprecated":
// Roots, Sampling and Logging, SEP-2577). They remain fully supported in
// every era; a client given clienthook.SetDeprecatedUse is told when a
// connection uses one.
const (
	featureRoots    = "roots"
	featureSampling = "sampling"
	featureLogging  = "logging"
)

// deprecatedFeature returns the deprecated feature method belongs to, or
// "". Only these fixed names are ever passed on: nothing of the server's
// own text.
func deprecatedFeature(method string) (feature, name string) {
	switch method {
	case abi.MethodSamplingCreate:
		return featureSampling, abi.MethodSamplingCreate
	case abi.MethodRootsList:
		return featureRoots, abi.MethodRootsList
	case "notifications/message":
		return featureLogging, "notifications/message"
	case "logging/setLevel":
		return featureLogging, "logging/setLevel"
	}
	return "", ""
}

// noteDeprecated tells the hook of clienthook.SetDeprecatedUse that the
// connection used method, when it belongs to a deprecated feature. It
// runs in the transport's reader or the caller's goroutine: the hook must
// not block.
func (c *Client) noteDeprecated(method string) {
	if c.cfg.onDeprecated == nil {
		return
	}
	if feature, name := deprecatedFeature(method); feature != "" {
		c.cfg.onDeprecated(feature, name)
	}
}
