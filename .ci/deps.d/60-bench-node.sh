#!/usr/bin/env bash
# The side-by-side benchmark's TypeScript SDK client (bench/clients/node):
# installs @modelcontextprotocol/sdk exactly as package-lock.json pins it.
# Idempotent: npm ci skips nothing but is quick when the cache is warm.
set -euo pipefail
cd "$(dirname "$0")/../../bench/clients/node"
if ! command -v npm >/dev/null; then
	apt-get update
	apt-get install -y nodejs npm
fi
npm ci --no-audit --no-fund
