#!/usr/bin/env bash
# Prints the number of exported identifiers of each Go package directory
# given (default: the root package, "."), one "DIR<TAB>COUNT" line each; -v
# lists the names too.
#
# Definition (internal/tools/exportednames, with go/doc on the package's
# non-test files), each name counted once: exported constants and variables
# (every name of a declaration), exported functions (constructors included),
# exported types, and the exported methods declared on exported types.
# Struct fields, interface methods and methods promoted from embedded
# fields are not counted.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./internal/tools/exportednames "$@"
