#!/usr/bin/env bash
# The TypeScript SDK v2 server packages (@modelcontextprotocol/server,
# @modelcontextprotocol/node, zod) for the Streamable HTTP interop tests
# (internal/interop/tsv2_test.go, which runs internal/interop/tsv2/server.mjs),
# exactly as internal/interop/tsv2/package-lock.json pins them, into
# internal/interop/tsv2/node_modules (git-ignored).
# Idempotent: skips the install when the pinned versions are already there.
set -euo pipefail
cd "$(dirname "$0")/../../internal/interop/tsv2"
if ! command -v npm >/dev/null; then
	echo "50-npm-tsv2: npm is needed (node 20 and npm)" >&2
	exit 1
fi
for pkg in @modelcontextprotocol/server @modelcontextprotocol/node zod; do
	want=$(node -p "require('./package.json').dependencies['$pkg']")
	have=$(node -p "try { require('./node_modules/$pkg/package.json').version } catch { '' }")
	if [ "$want" != "$have" ]; then
		npm ci --no-audit --no-fund
		break
	fi
done
