# Snodo's build. `make test` is the one command that runs every test,
# installing first what the tests need (.ci/deps.d); .ci/run calls it.

GO       ?= go
PKGS     ?= ./...
BENCH    ?= .
COUNT    ?= 6
FUZZTIME ?= 30s

# Pinned by .ci/deps.d/10-staticcheck.sh, which `make vet` runs first.
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck

.PHONY: all build test vet bench fuzz examples demo deps bench-compare conformance clean

all: build

build:
	$(GO) build $(PKGS)

# No function of the module's non-test code over LONGFUNCS_MAX lines
# (internal/tools/longfuncs); LONGFUNCS_SKIP may list directories whose
# own files are not checked (none are skipped).
LONGFUNCS_MAX  ?= 120
LONGFUNCS_SKIP ?=

# go vet, staticcheck, gofmt and longfuncs, on the main module and the
# bench module.
vet:
	$(GO) vet $(PKGS)
	$(GO) run ./internal/tools/longfuncs -max $(LONGFUNCS_MAX) -skip '$(LONGFUNCS_SKIP)' .
	cd bench && $(GO) vet ./...
	cd bench && $(GO) vet -tags nowasm ./clients/snodo
	@bash .ci/deps.d/10-staticcheck.sh
	$(STATICCHECK) $(PKGS)
	cd bench && $(STATICCHECK) ./...
	cd bench && $(STATICCHECK) -tags nowasm ./clients/snodo
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "not gofmt-formatted:"; echo "$$unformatted"; exit 1; fi

# Every test, with the race detector. The tools the tests need are installed
# first (idempotent: each script skips what is there; Debian packages need
# root), and the Wasm examples built, so the host's tests run against
# modules built from source.
test: deps vet examples
	$(GO) test -race -count=1 -timeout 30m $(PKGS)
	$(MAKE) -C bench test
	$(MAKE) conformance

# The official MCP conformance suite's client scenarios, at 2025-11-25, at
# 2026-07-28 and the extension ones, against internal/conformance/client;
# fails on a result not in internal/conformance/expected-failures
# (docs/CONFORMANCE.md).
conformance:
	@bash .ci/deps.d/40-conformance.sh
	GO=$(GO) scripts/conformance.sh

# Benchmarks: medians over COUNT runs are what BENCHMARKS.md quotes.
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -count $(COUNT) $(PKGS)

# Each fuzz target for FUZZTIME.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzLineReader$$' -fuzztime $(FUZZTIME) ./jsonrpc
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./jsonrpc
	$(GO) test -run '^$$' -fuzz '^FuzzAppendRequest$$' -fuzztime $(FUZZTIME) ./abi
	$(GO) test -run '^$$' -fuzz '^FuzzParseManifest$$' -fuzztime $(FUZZTIME) ./abi
	$(GO) test -run '^$$' -fuzz '^FuzzHasUnknownKeys$$' -fuzztime $(FUZZTIME) ./internal/jsoncodec
	$(GO) test -run '^$$' -fuzz '^FuzzInstrument$$' -fuzztime $(FUZZTIME) ./handlers/wasm
	$(GO) test -run '^$$' -fuzz '^FuzzModulesNearTheBounds$$' -fuzztime $(FUZZTIME) ./handlers/wasm
	$(GO) test -run '^$$' -fuzz '^FuzzOpen$$' -fuzztime $(FUZZTIME) ./internal/gateway/mrtr

# The example and test Wasm modules, from source.
examples:
	@if [ -x scripts/build-examples.sh ]; then scripts/build-examples.sh; fi

# The demo: a server asks, a Wasm module answers. Go alone is enough: the
# script builds the one module it needs when make examples has not.
demo:
	scripts/demo.sh

# Installs the toolchains the tests need (what .ci/run does first).
deps:
	@set -e; for dep in .ci/deps.d/*.sh; do echo "== $$dep"; bash "$$dep"; done

bench-compare:
	$(MAKE) -C bench compare

clean:
	rm -rf bin
