package snodo

import "slices"

// Version is Snodo's version: what the client reports as its clientInfo
// (unless Options.ClientInfo says otherwise) and what snodo-run prints.
const Version = "0.1.0"

// Protocol versions Snodo speaks (SupportedVersions lists them; a caller
// names one as a string, for Options.ProtocolVersion).
const (
	version20241105 = "2024-11-05"
	version20250326 = "2025-03-26"
	version20250618 = "2025-06-18"
	version20251125 = "2025-11-25"
	version20260728 = "2026-07-28"
)

// latestLegacyVersion is the version offered in an initialize request
// (SupportedVersions lists every version, newest first).
const latestLegacyVersion = version20251125

// Era is a family of protocol versions that share how a connection starts.
type Era int

const (
	// EraAuto, the default, probes the server with server/discover and
	// falls back to the initialize handshake for a legacy server.
	EraAuto Era = iota
	// EraLegacy is the initialize handshake (2024-11-05 … 2025-11-25):
	// server-to-client requests arrive on the connection.
	EraLegacy
	// EraModern is the stateless protocol (2026-07-28): every request
	// carries its version, client info and capabilities in _meta, and the
	// server asks for input through input_required results.
	EraModern
)

func (e Era) String() string {
	switch e {
	case EraAuto:
		return "auto"
	case EraLegacy:
		return "legacy"
	case EraModern:
		return "modern"
	}
	return "unknown"
}

// modernVersions and legacyVersions are the versions Snodo speaks, newest
// first.
var (
	modernVersions = []string{version20260728}
	legacyVersions = []string{version20251125, version20250618, version20250326, version20241105}
)

// SupportedVersions returns the protocol versions Snodo speaks, newest
// first.
func SupportedVersions() []string {
	return append(slices.Clone(modernVersions), legacyVersions...)
}

// eraOf returns the era of a version Snodo speaks, and false for any other.
func eraOf(version string) (Era, bool) {
	switch {
	case slices.Contains(modernVersions, version):
		return EraModern, true
	case slices.Contains(legacyVersions, version):
		return EraLegacy, true
	}
	return EraAuto, false
}

// newestModern returns the newest modern version Snodo speaks that is in
// offered, preferring preferred when it is there.
func newestModern(preferred string, offered []string) (string, bool) {
	if slices.Contains(offered, preferred) && slices.Contains(modernVersions, preferred) {
		return preferred, true
	}
	for _, v := range modernVersions {
		if slices.Contains(offered, v) {
			return v, true
		}
	}
	return "", false
}
