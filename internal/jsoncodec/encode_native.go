//go:build (amd64 && go1.17 && !go1.28) || (arm64 && go1.20 && !go1.28)

package jsoncodec

// nativeEncoder is true where sonic encodes with its own native code (the
// build constraint of sonic's encoder), whose output AppendAny reproduces.
// Elsewhere sonic's default configuration is encoding/json's encoder.
const nativeEncoder = true
