#!/usr/bin/env bash
# The demo behind `make demo` (Go alone is enough: it builds the one Wasm
# handler it uses when make examples has not): snodo-run starts the demo MCP server,
# the server asks the client to fill in a form, and a sandboxed Wasm module
# answers it — in both protocol eras — then a long tool call shows its
# progress.
set -euo pipefail
cd "$(dirname "$0")/.."

mkdir -p bin
echo "building snodo-run and the demo server…"
go build -o bin/snodo-run ./cmd/snodo-run
go build -o bin/demo ./examples/servers/demo

policy=examples/handlers/go/elicit-policy/elicit-policy.wasm
if [ ! -f "$policy" ]; then
	# make examples builds it; Go alone is enough for this one.
	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o "$policy" ./examples/handlers/go/elicit-policy
fi
config='{"values": {"name": "Ada Lovelace", "plan": "pro"}, "rules": [{"match": "delete", "action": "decline"}]}'

# shellquote prints its arguments as a shell reads them back: each word
# that is more than letters, digits and _./=:@%+,- in single quotes, so a
# command shown by step can be copied and pasted (the JSON of
# --handler-config among them).
shellquote() {
	local a out=()
	for a in "$@"; do
		if [[ $a =~ ^[A-Za-z0-9_./=:@%+,-]+$ ]]; then
			out+=("$a")
		else
			out+=("'${a//\'/\'\\\'\'}'")
		fi
	done
	printf '%s' "${out[*]}"
}
step() { printf '\n\033[1m$ %s\033[0m\n' "$(shellquote "$@")"; }
run() { step "$@"; "$@"; }

echo
echo "The demo server's register tool asks the client for a form (elicitation)."
echo "The Go-compiled Wasm module $policy answers it from its configuration."

echo "(--verbose logs what the server asks and what the module answers on stderr.)"

# Only the lines about the server's question and the module's answer.
asks() { grep --line-buffered -E 'the server asks|handler answered|handler failed|connected' >&2 || true; }

run bin/snodo-run --verbose --handler "$policy" --handler-config "$config" \
	tools call register --output text -- bin/demo --era modern 2> >(asks)
sleep 0.2

echo
echo "The same module answers the same form from a legacy (initialize-era) server:"
run bin/snodo-run --verbose --handler "$policy" --handler-config "$config" \
	tools call register --output text -- bin/demo --era legacy 2> >(asks)
sleep 0.2

echo
echo "A long tool call reports progress (a live bar on a terminal, log lines otherwise):"
progress=()
[ -t 2 ] || progress=(--verbose)
run bin/snodo-run "${progress[@]}" tools call count --arg steps=10 --arg delay_ms=300 --output text -- bin/demo

echo
echo "What the server offers, for people:"
run bin/snodo-run --handler "$policy" tools list --output text -- bin/demo
echo
echo "More: bin/snodo-run --help, and docs/CLI.md."
