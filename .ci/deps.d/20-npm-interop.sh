#!/usr/bin/env bash
# @modelcontextprotocol/server-everything and server-filesystem for the
# client's interop tests (internal/interop, cmd/snodo-run), exactly as
# internal/interop/everything/package-lock.json pins them, into
# internal/interop/everything/node_modules (git-ignored).
# Idempotent: skips the install when the pinned versions are already there.
set -euo pipefail
cd "$(dirname "$0")/../../internal/interop/everything"
if ! command -v npm >/dev/null; then
	echo "20-npm-interop: npm is needed (node 20 and npm)" >&2
	exit 1
fi
for pkg in server-everything server-filesystem; do
	want=$(node -p "require('./package.json').dependencies['@modelcontextprotocol/$pkg']")
	have=$(node -p "try { require('./node_modules/@modelcontextprotocol/$pkg/package.json').version } catch { '' }")
	if [ "$want" != "$have" ]; then
		npm ci --no-audit --no-fund
		break
	fi
done
