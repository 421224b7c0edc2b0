//go:build (!amd64 && !arm64) || go1.28 || !go1.17 || (arm64 && !go1.20)

package jsoncodec

// nativeEncoder is false where sonic's default configuration is
// encoding/json's encoder, whose output AppendAny does not reproduce.
const nativeEncoder = false
