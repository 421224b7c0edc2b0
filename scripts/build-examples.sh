#!/usr/bin/env bash
# Builds every example and test Wasm handler module from source
# (examples/handlers/{go,c,assemblyscript,wat,rust}). Called by `make examples`
# and `make test`.
#
# Go modules are built into examples/handlers/go/<name>/<name>.wasm (not
# committed). The small C, AssemblyScript, WAT and Rust modules are committed
# beside their source; this script rebuilds each one and fails if the
# result differs from the committed file, so what is committed is what the
# source says. `scripts/build-examples.sh --update` writes the rebuilt
# files instead.
#
# Toolchains (installed by .ci/deps.d/30-wasm-toolchain.sh): Go, wabt
# (wat2wasm), clang + lld + wasi-libc + libclang-rt-dev-wasm32, the
# AssemblyScript compiler pinned in examples/handlers/assemblyscript, and
# Debian's rustc + libstd-rust-dev-wasm32 (target wasm32-wasi; the
# committed Rust modules are what that rustc 1.63 builds, so a rustup
# toolchain first on PATH is not used for them: SNODO_RUSTC, default
# /usr/bin/rustc, names the compiler).
set -euo pipefail
cd "$(dirname "$0")/.."

update=false
[ "${1:-}" = "--update" ] && update=true

root=examples/handlers
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

missing=()
need() { # need TOOL "what to install"
	command -v "$1" >/dev/null 2>&1 || missing+=("$1 — $2")
}
need go "Go (https://go.dev/dl/), on PATH"
need wat2wasm "Debian package wabt"
need clang "Debian package clang"
need wasm-ld "Debian package lld"
need node "Node.js 20 (Debian package nodejs)"
[ -f /usr/include/wasm32-wasi/stdio.h ] || missing+=("wasi-libc headers — Debian package wasi-libc")
compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a" >/dev/null ||
	missing+=("compiler-rt for wasm32 — Debian package libclang-rt-dev-wasm32")
rust_rustc=${SNODO_RUSTC:-/usr/bin/rustc}
[ -x "$rust_rustc" ] || missing+=("rustc at $rust_rustc — Debian package rustc (or set SNODO_RUSTC)")
if [ -x "$rust_rustc" ] && [ ! -d "$("$rust_rustc" --print sysroot 2>/dev/null)/lib/rustlib/wasm32-wasi" ]; then
	missing+=("the wasm32-wasi standard library for $rust_rustc — Debian package libstd-rust-dev-wasm32")
fi
asc=$root/assemblyscript/node_modules/.bin/asc
[ -x "$asc" ] || missing+=("AssemblyScript compiler — run: (cd $root/assemblyscript && npm ci)")
if [ ${#missing[@]} -gt 0 ]; then
	echo "build-examples: cannot build the Wasm examples; missing:" >&2
	printf '  - %s\n' "${missing[@]}" >&2
	echo "Install them all with: sudo bash .ci/deps.d/30-wasm-toolchain.sh" >&2
	exit 1
fi

failed=()
# check NEW COMMITTED: the rebuilt module must equal the committed one.
check() {
	local new=$1 committed=$2
	if $update; then
		cp "$new" "$committed"
		echo "  wrote $committed"
	elif [ ! -f "$committed" ]; then
		failed+=("$committed is not committed (run scripts/build-examples.sh --update)")
	elif ! cmp -s "$new" "$committed"; then
		failed+=("$committed does not match its source (run scripts/build-examples.sh --update and commit)")
	else
		echo "  ok $committed"
	fi
}

echo "== Go (GOOS=wasip1 -buildmode=c-shared)"
for dir in "$root"/go/*/; do
	name=$(basename "$dir")
	GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 go build -buildmode=c-shared -o "$dir/$name.wasm" "./$dir"
	echo "  built $dir$name.wasm"
done

echo "== WAT (wat2wasm)"
while IFS= read -r src; do
	out=$tmp/$(basename "${src%.wat}").wasm
	wat2wasm "$src" -o "$out"
	check "$out" "${src%.wat}.wasm"
done < <(find "$root/wat" -name '*.wat' | sort)

echo "== C (clang + wasi-libc, reactor)"
while IFS= read -r src; do
	out=$tmp/$(basename "${src%.c}").wasm
	clang --target=wasm32-wasi --sysroot=/usr -mexec-model=reactor -O2 -Wall -Werror \
		-Wl,--strip-all -o "$out" "$src"
	check "$out" "${src%.c}.wasm"
done < <(find "$root/c" -name '*.c' | sort)

echo "== AssemblyScript ($("$asc" --version))"
for src in "$root"/assemblyscript/*/index.ts; do
	dir=$(dirname "$src")
	name=$(basename "$dir")
	out=$tmp/$name.wasm
	"$asc" "$src" -o "$out" --optimize --exportStart _initialize
	check "$out" "$dir/$name.wasm"
done

echo "== Rust ($("$rust_rustc" --version), wasm32-wasi cdylib)"
# rustc directly, not cargo: cargo's symbol hashes depend on where the
# repository is, and so would the modules. The flags are those of the
# release profile of examples/handlers/rust/Cargo.toml, with which
# `cargo build --release --target wasm32-wasi` builds the same handlers
# (not byte for byte). Paths in panic messages are made relative to the
# repository.
rustflags=(--edition 2021 --target wasm32-wasi -C opt-level=3 -C codegen-units=1 -C panic=abort
	-C strip=symbols "--remap-path-prefix=$PWD=." -D warnings)
"$rust_rustc" "${rustflags[@]}" --crate-type rlib --crate-name snodo_guest -C metadata=snodo-guest \
	-C embed-bitcode=yes -o "$tmp/libsnodo_guest.rlib" abi/guest-rust/src/lib.rs
for dir in "$root"/rust/*/; do
	name=$(basename "$dir")
	[ -f "$dir/src/lib.rs" ] || continue
	"$rust_rustc" "${rustflags[@]}" -C lto=fat --crate-type cdylib --crate-name "${name//-/_}" -C "metadata=$name" \
		--extern "snodo_guest=$tmp/libsnodo_guest.rlib" -o "$tmp/$name.wasm" "${dir}src/lib.rs"
	check "$tmp/$name.wasm" "$dir$name.wasm"
done

# The Rust guest crate's own tests (its JSON parser's bounds, the entry
# points' statuses and errors), natively.
rust_cargo=${SNODO_CARGO:-/usr/bin/cargo}
if [ -x "$rust_cargo" ]; then
	(cd abi/guest-rust && RUSTC="$rust_rustc" RUSTDOC="$(dirname "$rust_rustc")/rustdoc" CARGO_TARGET_DIR="$tmp/cargo" "$rust_cargo" test --quiet --offline) ||
		failed+=("abi/guest-rust: cargo test failed")
else
	failed+=("cargo at $rust_cargo — Debian package cargo (or set SNODO_CARGO) — for abi/guest-rust's tests")
fi

if [ ${#failed[@]} -gt 0 ]; then
	echo "build-examples: FAILED:" >&2
	printf '  - %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "build-examples: all examples built"
