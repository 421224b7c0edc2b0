//go:build !unix

package oauth

// nofollow is not available on this platform.
const nofollow = 0
