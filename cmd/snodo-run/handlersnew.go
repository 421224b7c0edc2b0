package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"

	"github.com/spf13/cobra"

	"github.com/snodo/snodo/abi"
)

// newLangs are the languages `handlers new` writes a project in.
var newLangs = []string{"go", "rust", "c", "as", "wat"}

// newMethods are what `handlers new --method` accepts: the requests of
// the ABI, and the two consumers.
var newMethods = []string{abi.MethodElicitationCreate, abi.MethodSamplingCreate, abi.MethodRootsList, "progress", "events"}

// handlerName is a module name that is also a Go module path, a Rust
// package name, a C identifier stem and a file name.
var handlerName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// newProject is what the templates of `handlers new` see.
type newProject struct {
	Name      string
	Ident     string // Name with '_' for '-' (Rust crate, C)
	Lang      string
	Methods   []string // the requests among the --method values
	Elicit    bool
	Sampling  bool
	Roots     bool
	Progress  bool
	Events    bool
	Manifest  string // the manifest JSON (C, AssemblyScript, WAT)
	GoVersion string
}

// newHandlerProject writes a project for a handler module called after
// dir's base name into dir, which must not exist (its parent must).
func newHandlerProject(dir, lang string, methods []string) (*newProject, error) {
	name := filepath.Base(filepath.Clean(dir))
	if !handlerName.MatchString(name) {
		return nil, usageErr("handlers new: bad name %q: use lower-case letters, digits and '-', starting with a letter (at most 63), such as my-policy", name)
	}
	if !slices.Contains(newLangs, lang) {
		return nil, usageErr("handlers new: unknown language %q: use --lang with one of %s", lang, strings.Join(newLangs, ", "))
	}
	if len(methods) == 0 {
		methods = []string{abi.MethodElicitationCreate}
	}
	p := &newProject{Name: name, Ident: strings.ReplaceAll(name, "-", "_"), Lang: lang, GoVersion: "1.24"}
	seen := map[string]bool{}
	for _, m := range methods {
		if !slices.Contains(newMethods, m) {
			return nil, usageErr("handlers new: unknown method %q: use --method with one of %s (repeatable)", m, strings.Join(newMethods, ", "))
		}
		if seen[m] {
			return nil, usageErr("handlers new: --method %s given twice", m)
		}
		seen[m] = true
		switch m {
		case abi.MethodElicitationCreate:
			p.Elicit = true
		case abi.MethodSamplingCreate:
			p.Sampling = true
		case abi.MethodRootsList:
			p.Roots = true
		case "progress":
			p.Progress = true
		case "events":
			p.Events = true
		}
	}
	for _, m := range abi.KnownMethods {
		if seen[m] {
			p.Methods = append(p.Methods, m)
		}
	}
	man, _ := json.Marshal(abi.Manifest{ABI: abi.Version, Name: name, Methods: p.Methods, Progress: p.Progress, Events: p.Events})
	p.Manifest = string(man)

	files := map[string]string{}
	for file, tmpl := range newTemplates[lang] {
		var b bytes.Buffer
		if err := template.Must(template.New(file).Parse(tmpl)).Execute(&b, p); err != nil {
			return nil, err
		}
		files[strings.ReplaceAll(file, "NAME", name)] = b.String()
	}
	first := methods[0]
	files["request.json"] = newRequests[first] + "\n"
	files["README.md"] = newReadme(p, first)
	if err := addSDK(files, lang); err != nil {
		return nil, err
	}

	// Mkdir, not MkdirAll: an existing directory (or file) is refused,
	// and nothing is written outside dir.
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, usageErr("handlers new: %s already exists: give a new directory", dir)
		}
		return nil, usageErr("handlers new: %v (the parent directory must exist)", err)
	}
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	slices.Sort(names)
	for _, f := range names {
		full := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return nil, err
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(f, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(full, []byte(files[f]), mode); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// addSDK copies the guest SDK a Go or Rust project builds with into it
// (snodo-sdk/), so that it builds offline and against this snodo-run's ABI.
func addSDK(files map[string]string, lang string) error {
	var prefix []string
	switch lang {
	case "go":
		files["snodo-sdk/go.mod"] = "module github.com/snodo/snodo\n\ngo 1.24\n"
		prefix = []string{".", "guest"}
	case "rust":
		prefix = []string{"guest-rust", "guest-rust/src"}
	default:
		return nil
	}
	for _, dir := range prefix {
		entries, err := fs.ReadDir(abi.GuestSources, dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			n := e.Name()
			if e.IsDir() || strings.HasSuffix(n, "_test.go") || n == "sources.go" {
				continue
			}
			b, err := fs.ReadFile(abi.GuestSources, path.Join(dir, n))
			if err != nil {
				return err
			}
			out := "snodo-sdk/abi/" + path.Join(dir, n)
			if lang == "rust" {
				out = "snodo-sdk/" + strings.TrimPrefix(path.Join(dir, n), "guest-rust/")
			}
			files[out] = string(b)
		}
	}
	return nil
}

// newRequests are the request.json of each method: params to try the
// module with.
var newRequests = map[string]string{
	abi.MethodElicitationCreate: `{"mode":"form","message":"What is your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string","default":"Ada"}},"required":["name"]}}`,
	abi.MethodSamplingCreate:    `{"messages":[{"role":"user","content":{"type":"text","text":"Hello"}}],"maxTokens":100}`,
	abi.MethodRootsList:         `{}`,
	"progress":                  `{"progressToken":"t1","progress":1,"total":10,"message":"working"}`,
	"events":                    `{"uri":"file:///tmp/example.txt"}`,
}

// newTestMethod is the --method of `handlers test` for a --method of
// `handlers new`.
func newTestMethod(m string) string {
	if m == "events" {
		return "notifications/resources/updated"
	}
	return m
}

var newBuild = map[string]string{
	"go":   "GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o NAME.wasm .",
	"rust": "./build.sh   # cargo for wasm32-wasi (Debian's rustc) or wasm32-wasip1 (rustup)",
	"c":    "./build.sh   # clang --target=wasm32-wasi -mexec-model=reactor (wasi-libc)",
	"as":   "npm install && ./build.sh   # asc --exportStart _initialize",
	"wat":  "wat2wasm NAME.wat -o NAME.wasm",
}

func newReadme(p *newProject, first string) string {
	build := strings.ReplaceAll(newBuild[p.Lang], "NAME", p.Name)
	return fmt.Sprintf(`# %s

A Snodo handler module (abi/ABI.md) written by `+"`snodo-run handlers new`"+`. Build it, check it, try it:

`+"```sh"+`
%s
snodo-run handlers check %s.wasm
snodo-run handlers test %s.wasm --method %s --params @request.json
`+"```"+`
`, p.Name, build, p.Name, p.Name, newTestMethod(first))
}

var newTemplates = map[string]map[string]string{
	"go": {
		"go.mod": `module {{.Name}}

go {{.GoVersion}}

require github.com/snodo/snodo v0.0.0

// The guest SDK, copied by snodo-run handlers new (builds offline).
replace github.com/snodo/snodo => ./snodo-sdk
`,
		"main.go": `// Command {{.Name}} is a Snodo handler module (abi/ABI.md).
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o {{.Name}}.wasm .
package main

import "github.com/snodo/snodo/abi/guest"

// Handlers are registered in init: main does not run in a c-shared module.
func init() {
	guest.SetName("{{.Name}}")
{{- if .Elicit}}
	guest.HandleElicitation(func(ctx guest.Context, req guest.ElicitRequest) (guest.ElicitResult, error) {
		ctx.Infof("elicitation: %s", req.Message)
		// Decide here: accept with guest.Fields{guest.String("name", "Ada")}, decline or cancel.
		return guest.ElicitResult{Action: guest.Decline}, nil
	})
{{- end}}
{{- if .Sampling}}
	guest.HandleSampling(func(ctx guest.Context, req guest.SamplingRequest) (guest.SamplingResult, error) {
		return guest.SamplingResult{Role: "assistant", Content: guest.Text("Hello from {{.Name}}."), Model: "{{.Name}}", StopReason: "endTurn"}, nil
	})
{{- end}}
{{- if .Roots}}
	guest.HandleRoots(func(ctx guest.Context, req guest.RootsRequest) (guest.RootsResult, error) {
		return guest.RootsResult{Roots: []guest.Root{}}, nil
	})
{{- end}}
{{- if .Progress}}
	guest.HandleProgress(func(ctx guest.Context, p guest.Progress) (guest.Action, error) {
		ctx.Infof("progress %v: %s", p.Progress, p.Message)
		return guest.Continue, nil // guest.Stop cancels the request
	})
{{- end}}
{{- if .Events}}
	guest.HandleEvents(func(ctx guest.Context, ev guest.Event) (guest.Action, error) {
		ctx.Infof("event %s", ev.Method)
		return guest.Continue, nil // guest.Stop ends the subscription
	})
{{- end}}
}

func main() {}
`,
	},
	"rust": {
		"Cargo.toml": `[package]
name = "{{.Name}}"
version = "0.1.0"
edition = "2021"
publish = false

[lib]
crate-type = ["cdylib"]

[dependencies]
# The guest SDK, copied by snodo-run handlers new (builds offline).
snodo-guest = { path = "snodo-sdk" }

[profile.release]
opt-level = 3
lto = true
codegen-units = 1
panic = "abort"
strip = true
`,
		"src/lib.rs": `//! {{.Name}}: a Snodo handler module (abi/ABI.md). Build with ./build.sh.

#[allow(unused_imports)]
use snodo_guest::{
    Context, ElicitRequest, ElicitResult, Error, Event, FieldValue, Flow, Progress, Registry, RootsRequest,
    RootsResult, SamplingRequest, SamplingResult,
};
{{if .Elicit}}
fn elicit(ctx: &Context<'_>, req: &ElicitRequest<'_>) -> Result<ElicitResult, Error> {
    ctx.info(&format!("elicitation: {}", req.message));
    // Decide here: ElicitResult::accept(vec![("name".into(), FieldValue::String("Ada".into()))]),
    // decline or cancel.
    Ok(ElicitResult::decline())
}
{{end}}{{if .Sampling}}
fn sample(_ctx: &Context<'_>, _req: &SamplingRequest<'_>) -> Result<SamplingResult, Error> {
    Ok(SamplingResult::text("{{.Name}}", "Hello from {{.Name}}."))
}
{{end}}{{if .Roots}}
fn roots(_ctx: &Context<'_>, _req: &RootsRequest<'_>) -> Result<RootsResult, Error> {
    Ok(RootsResult::default())
}
{{end}}{{if .Progress}}
fn progress(ctx: &Context<'_>, p: &Progress<'_>) -> Result<Flow, Error> {
    ctx.info(&format!("progress {}: {}", p.progress, p.message));
    Ok(Flow::Continue) // Flow::Stop cancels the request
}
{{end}}{{if .Events}}
fn event(ctx: &Context<'_>, ev: &Event<'_>) -> Result<Flow, Error> {
    ctx.info(&format!("event {}", ev.method));
    Ok(Flow::Continue) // Flow::Stop ends the subscription
}
{{end}}
fn register(r: &mut Registry) {
    r.name("{{.Name}}");
{{- if .Elicit}}
    r.elicitation(elicit);
{{- end}}{{if .Sampling}}
    r.sampling(sample);
{{- end}}{{if .Roots}}
    r.roots(roots);
{{- end}}{{if .Progress}}
    r.progress(progress);
{{- end}}{{if .Events}}
    r.events(event);
{{- end}}
}

snodo_guest::register!(register);
`,
		"build.sh": `#!/bin/sh
# Builds {{.Name}}.wasm: with Debian's Rust (apt-get install rustc cargo
# libstd-rust-dev-wasm32; target wasm32-wasi) when it is there, else with
# rustup's current toolchain (rustup target add wasm32-wasip1).
set -eu
cd "$(dirname "$0")"
if [ -d /usr/lib/rustlib/wasm32-wasi ] && [ -x /usr/bin/cargo ]; then
	RUSTC=/usr/bin/rustc /usr/bin/cargo build --offline --release --target wasm32-wasi
	cp target/wasm32-wasi/release/{{.Ident}}.wasm {{.Name}}.wasm
else
	cargo build --offline --release --target wasm32-wasip1
	cp target/wasm32-wasip1/release/{{.Ident}}.wasm {{.Name}}.wasm
fi
echo "built {{.Name}}.wasm"
`,
		".gitignore": "/target/\n/Cargo.lock\n*.wasm\n",
	},
	"c": {
		"NAME.c": `/* {{.Name}}: a Snodo handler module (abi/ABI.md) in C, a WASI reactor.
 * Build with ./build.sh. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT(name) __attribute__((export_name(name)))
#define IMPORT(name) __attribute__((import_module("snodo"), import_name(name)))

IMPORT("set_output") void snodo_set_output(const void *ptr, uint32_t len);
IMPORT("log") void snodo_log(int32_t level, const void *ptr, uint32_t len);

enum { OK = 0, ERROR = 1, STOP = 2 };

static void output(const char *s) { snodo_set_output(s, strlen(s)); }
__attribute__((unused)) static void info(const char *s) { snodo_log(1, s, strlen(s)); }

/* The input buffer: the host fills it after snodo_alloc, and may reuse it
 * for later calls that fit. */
static char *input;

EXPORT("snodo_alloc") void *snodo_alloc(uint32_t size) {
	free(input);
	input = malloc(size ? size : 1);
	return input;
}

EXPORT("snodo_describe") int32_t snodo_describe(void) {
	output({{printf "%q" .Manifest}});
	return OK;
}
{{if .Methods}}
/* is reports whether the call's input, {"method":"...","params":...},
 * names method. */
static int is(const char *in, uint32_t len, const char *method) {
	size_t n = strlen(method);
	return len > 12 + n && memcmp(in, "{\"method\":\"", 11) == 0 && memcmp(in + 11, method, n) == 0 && in[11 + n] == '"';
}

EXPORT("snodo_handle") int32_t snodo_handle(const char *in, uint32_t len) {
{{- if .Elicit}}
	if (is(in, len, "elicitation/create")) {
		info("elicitation: declined");
		output("{\"action\":\"decline\"}"); /* decide here */
		return OK;
	}
{{- end}}{{if .Sampling}}
	if (is(in, len, "sampling/createMessage")) {
		output("{\"role\":\"assistant\",\"content\":{\"type\":\"text\",\"text\":\"Hello from {{.Name}}.\"},\"model\":\"{{.Name}}\",\"stopReason\":\"endTurn\"}");
		return OK;
	}
{{- end}}{{if .Roots}}
	if (is(in, len, "roots/list")) {
		output("{\"roots\":[]}");
		return OK;
	}
{{- end}}
	output("{\"code\":-32601,\"message\":\"method not found\"}");
	return ERROR;
}
{{end}}{{if .Progress}}
EXPORT("snodo_progress") int32_t snodo_progress(const char *in, uint32_t len) {
	(void)in;
	(void)len;
	info("progress");
	return OK; /* STOP cancels the request */
}
{{end}}{{if .Events}}
EXPORT("snodo_event") int32_t snodo_event(const char *in, uint32_t len) {
	(void)in;
	(void)len;
	info("event");
	return OK; /* STOP ends the subscription */
}
{{end -}}
`,
		"build.sh": `#!/bin/sh
# Builds {{.Name}}.wasm with clang, lld and wasi-libc (Debian: clang lld
# wasi-libc libclang-rt-dev-wasm32), as a reactor.
set -eu
cd "$(dirname "$0")"
clang --target=wasm32-wasi --sysroot=/usr -mexec-model=reactor -O2 -Wall -Werror -Wl,--strip-all -o {{.Name}}.wasm {{.Name}}.c
echo "built {{.Name}}.wasm"
`,
	},
	"as": {
		"index.ts": `// {{.Name}}: a Snodo handler module (abi/ABI.md) in AssemblyScript.
// Build with ./build.sh (after npm install).

@external("snodo", "set_output")
declare function set_output(ptr: usize, len: u32): void;

@external("snodo", "log")
declare function host_log(level: i32, ptr: usize, len: u32): void;

const OK: i32 = 0;
const ERROR: i32 = 1;

function output(s: string): void {
  const b = String.UTF8.encode(s);
  set_output(changetype<usize>(b), <u32>b.byteLength);
}

function info(s: string): void {
  const b = String.UTF8.encode(s);
  host_log(1, changetype<usize>(b), <u32>b.byteLength);
}

// The input buffer: the host fills it after snodo_alloc, and may reuse it
// for later calls that fit. Kept alive by this global.
let input = new ArrayBuffer(0);

export function snodo_alloc(size: u32): usize {
  input = new ArrayBuffer(size > 0 ? <i32>size : 1);
  return changetype<usize>(input);
}

export function snodo_describe(): i32 {
  output({{printf "%q" .Manifest}});
  return OK;
}
{{if .Methods}}
export function snodo_handle(ptr: usize, len: u32): i32 {
  const req = String.UTF8.decodeUnsafe(ptr, len);
{{- if .Elicit}}
  if (req.startsWith('{"method":"elicitation/create"')) {
    info("elicitation: declined");
    output('{"action":"decline"}'); // decide here
    return OK;
  }
{{- end}}{{if .Sampling}}
  if (req.startsWith('{"method":"sampling/createMessage"')) {
    output('{"role":"assistant","content":{"type":"text","text":"Hello from {{.Name}}."},"model":"{{.Name}}","stopReason":"endTurn"}');
    return OK;
  }
{{- end}}{{if .Roots}}
  if (req.startsWith('{"method":"roots/list"')) {
    output('{"roots":[]}');
    return OK;
  }
{{- end}}
  output('{"code":-32601,"message":"method not found"}');
  return ERROR;
}
{{end}}{{if .Progress}}
export function snodo_progress(ptr: usize, len: u32): i32 {
  info("progress");
  return OK; // 2 (STOP) cancels the request
}
{{end}}{{if .Events}}
export function snodo_event(ptr: usize, len: u32): i32 {
  info("event");
  return OK; // 2 (STOP) ends the subscription
}
{{end -}}
`,
		"package.json": `{
  "name": "{{.Name}}",
  "private": true,
  "devDependencies": {
    "assemblyscript": "0.28.20"
  }
}
`,
		"build.sh": `#!/bin/sh
# Builds {{.Name}}.wasm with the AssemblyScript compiler (npm install
# first; ASC names another asc).
set -eu
cd "$(dirname "$0")"
"${ASC:-node_modules/.bin/asc}" index.ts -o {{.Name}}.wasm --optimize --exportStart _initialize
echo "built {{.Name}}.wasm"
`,
		".gitignore": "node_modules\n*.wasm\n",
	},
	"wat": {
		"NAME.wat": `;; {{.Name}}: a Snodo handler module (abi/ABI.md) in WebAssembly text.
;; Build: wat2wasm {{.Name}}.wat -o {{.Name}}.wasm
(module
  (import "snodo" "set_output" (func $set_output (param i32 i32)))

  ;; Page 0: the manifest and the answers. Page 1 onwards: the input
  ;; buffer, grown on demand.
  (memory (export "memory") 2)
  (data (i32.const 16) {{printf "%q" .Manifest}}) ;; {{len .Manifest}} bytes
{{- if .Elicit}}
  (data (i32.const 8192) "{\"action\":\"decline\"}") ;; 20 bytes: decide here
{{- end}}{{if .Sampling}}
  (data (i32.const 8448) {{printf "%q" (printf "{\"role\":\"assistant\",\"content\":{\"type\":\"text\",\"text\":\"Hello from %s.\"},\"model\":\"%s\",\"stopReason\":\"endTurn\"}" .Name .Name)}})
{{- end}}{{if .Roots}}
  (data (i32.const 8960) "{\"roots\":[]}")
{{- end}}
  (data (i32.const 9216) "{\"code\":-32601,\"message\":\"method not found\"}")

  (func (export "snodo_describe") (result i32)
    (call $set_output (i32.const 16) (i32.const {{len .Manifest}}))
    (i32.const 0))

  (func (export "snodo_alloc") (param $n i32) (result i32)
    (local $pages i32)
    (local.set $pages
      (i32.add (i32.const 1)
        (i32.shr_u (i32.add (local.get $n) (i32.const 65535)) (i32.const 16))))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size))) (i32.const -1))
          (then (return (i32.const 0))))))
    (i32.const 65536))
{{if .Methods}}
  ;; The input is {"method":"...","params":...}: the method's first
  ;; letter, at byte 11, tells the requests apart.
  (func (export "snodo_handle") (param $ptr i32) (param $len i32) (result i32)
    (local $c i32)
    (if (i32.lt_u (local.get $len) (i32.const 12)) (then (local.set $len (i32.const 0))))
    (if (i32.ge_u (local.get $len) (i32.const 12))
      (then (local.set $c (i32.load8_u (i32.add (local.get $ptr) (i32.const 11))))))
{{- if .Elicit}}
    (if (i32.eq (local.get $c) (i32.const 101)) ;; 'e': elicitation/create
      (then (call $set_output (i32.const 8192) (i32.const 20)) (return (i32.const 0))))
{{- end}}{{if .Sampling}}
    (if (i32.eq (local.get $c) (i32.const 115)) ;; 's': sampling/createMessage
      (then (call $set_output (i32.const 8448) (i32.const {{len (printf "{\"role\":\"assistant\",\"content\":{\"type\":\"text\",\"text\":\"Hello from %s.\"},\"model\":\"%s\",\"stopReason\":\"endTurn\"}" .Name .Name)}})) (return (i32.const 0))))
{{- end}}{{if .Roots}}
    (if (i32.eq (local.get $c) (i32.const 114)) ;; 'r': roots/list
      (then (call $set_output (i32.const 8960) (i32.const 12)) (return (i32.const 0))))
{{- end}}
    (call $set_output (i32.const 9216) (i32.const 44))
    (i32.const 1))
{{end}}{{if .Progress}}
  ;; 0 lets the request go on; 2 (STOP) cancels it.
  (func (export "snodo_progress") (param i32 i32) (result i32)
    (i32.const 0))
{{end}}{{if .Events}}
  ;; 0 keeps the subscription; 2 (STOP) ends it.
  (func (export "snodo_event") (param i32 i32) (result i32)
    (i32.const 0))
{{end -}}
)
`,
	},
}

// newReport is what `handlers new` prints.
type newReport struct {
	Dir     string   `json:"dir"`
	Name    string   `json:"name"`
	Lang    string   `json:"lang"`
	Methods []string `json:"methods"`
	Build   string   `json:"build"`
	Try     string   `json:"try"`
}

func (r newReport) renderText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "wrote %s (%s)\n  cd %s\n  %s\n  %s\n", r.Dir, r.Lang, r.Dir, r.Build, r.Try)
	return err
}

func (a *app) handlersNewCmd() *cobra.Command {
	var lang string
	var methods []string
	cmd := &cobra.Command{
		Use:   "new DIR --lang go|rust|c|as|wat [--method METHOD]...",
		Short: "Write a new handler module project, ready to build, check and test",
		Long: `new writes a project for a handler module into DIR, which must not exist
(its parent must); the module's name is DIR's last element (lower-case
letters, digits and '-'). It holds the source, a build file or command, a
request.json to try the module with, and a README.md saying how. Go and Rust
projects carry a copy of the guest SDK (snodo-sdk/), so they build offline.
--method (repeatable; default elicitation/create) is a request the module
answers (elicitation/create, sampling/createMessage, roots/list) or a
consumer: progress (notifications/progress of a request) or events (a
subscription's events).`,
		Example: `  snodo-run handlers new my-policy --lang rust
  snodo-run handlers new answers --lang go --method elicitation/create --method sampling/createMessage`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if lang == "" {
				return usageErr("handlers new wants --lang, one of %s", strings.Join(newLangs, ", "))
			}
			p, err := newHandlerProject(args[0], lang, methods)
			if err != nil {
				return err
			}
			first := abi.MethodElicitationCreate
			if len(methods) > 0 {
				first = methods[0]
			}
			all := append(append([]string{}, p.Methods...), func() (c []string) {
				if p.Progress {
					c = append(c, "progress")
				}
				if p.Events {
					c = append(c, "events")
				}
				return c
			}()...)
			return a.print(newReport{
				Dir: args[0], Name: p.Name, Lang: lang, Methods: all,
				Build: strings.ReplaceAll(newBuild[lang], "NAME", p.Name),
				Try:   fmt.Sprintf("snodo-run handlers test %s.wasm --method %s --params @request.json", p.Name, newTestMethod(first)),
			})
		},
	}
	cmd.Flags().StringVar(&lang, "lang", "", "the module's language: "+strings.Join(newLangs, ", "))
	cmd.Flags().StringArrayVar(&methods, "method", nil, "what the module answers: "+strings.Join(newMethods, ", ")+"; repeatable (default elicitation/create)")
	return cmd
}
