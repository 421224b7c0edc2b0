#!/usr/bin/env bash
# staticcheck for `make vet`, at a pinned version that supports
# Go 1.26, into $(go env GOPATH)/bin. Idempotent: skips the install when
# that version is already there.
set -euo pipefail
version=v0.8.2 # staticcheck 2026.2.2
bin="$(go env GOPATH)/bin/staticcheck"
if ! "$bin" -version 2>/dev/null | grep -qF "(${version#v})"; then
	GOBIN="$(go env GOPATH)/bin" go install "honnef.co/go/tools/cmd/staticcheck@$version"
fi
