#!/usr/bin/env bash
# @modelcontextprotocol/server-everything for the client's interop tests
# (internal/interop), exactly as internal/interop/everything/package-lock.json
# pins it, into internal/interop/everything/node_modules (git-ignored).
# Idempotent: skips the install when the pinned version is already there.
set -euo pipefail
cd "$(dirname "$0")/../../internal/interop/everything"
if ! command -v npm >/dev/null; then
	echo "20-npm-interop: npm is needed (node 20 and npm)" >&2
	exit 1
fi
want=$(node -p 'require("./package.json").dependencies["@modelcontextprotocol/server-everything"]')
have=$(node -p 'try { require("./node_modules/@modelcontextprotocol/server-everything/package.json").version } catch { "" }')
if [ "$want" != "$have" ]; then
	npm ci --no-audit --no-fund
fi
