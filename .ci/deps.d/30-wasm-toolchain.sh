#!/usr/bin/env bash
# Toolchains for the example and test Wasm handlers (scripts/build-examples.sh):
# clang + lld + wasi-libc + compiler-rt for C, wabt (wat2wasm) for WAT, the
# AssemblyScript compiler from npm, pinned by examples/handlers/assemblyscript's
# package-lock.json, and Rust: Debian's rustc + cargo (1.63) with the
# wasm32-wasi standard library (libstd-rust-dev-wasm32), at /usr/bin — a
# rustup toolchain first on PATH is left alone, and the builds name
# /usr/bin/rustc. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."

pkgs=(clang lld wasi-libc libclang-rt-dev-wasm32 wabt rustc cargo libstd-rust-dev-wasm32)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	apt-get install -y --no-install-recommends "${missing[@]}"
fi

as_dir=examples/handlers/assemblyscript
if [ -f "$as_dir/package-lock.json" ] && [ ! -x "$as_dir/node_modules/.bin/asc" ]; then
	(cd "$as_dir" && npm ci --no-audit --no-fund)
fi
