// Command shell-guard is a Snodo interceptor module (ABI version 2) that
// refuses dangerous command lines sent to a server's shell-like tools,
// before the server sees them:
//
//	{
//	  "tools": ["run_command", "shell", "exec"],
//	  "argument": "command",
//	  "deny": ["git push --force", "kubectl delete"],
//	  "allow": ["ls", "cat", "git", "grep"]
//	}
//
// A deny-list is a speed bump, not a sandbox. A shell is a programming
// language: there are always more ways to spell a command than a list can
// name (a script written to a file and run, a binary fetched under another
// name, base64 decoded into a variable, an interpreter such as python or
// perl, a server that runs the string through something other than a POSIX
// shell …). Use shell-guard to stop a model's mistakes and the common
// tricks, and confine the server itself — a container, a read-only
// filesystem, an unprivileged user, no network — for anything that matters.
// The reliable control is an allow-list: with "allow", only command lines
// whose every command is listed go.
//
// For each tools/call of the listed "tools" (default: run_command, shell,
// exec; names compared ignoring case, "_" and "-", as a lenient server may
// match them), the argument named "argument" (default: command) must be a
// string; a call without it, or with another JSON type, is refused. Arrays
// of strings among the other arguments (args, argv) are read as more
// words of the command, quoted as they are. The string is
// read as a POSIX shell would read it, and every command it would run is
// checked: each command of a list or a pipeline (; & && || | |& newline),
// in subshells and groups, in command and process substitutions ($(…),
// `…`, <(…)), in the code given to sh -c, bash -c, su -c, eval and alias,
// in here-documents and here-strings given to a shell, and behind wrappers
// (sudo, doas, env, nohup, nice, timeout, xargs, find -exec, busybox, ssh,
// kubectl exec …). Text that may or may not be run — comments (zsh runs
// them as commands), other here-documents (a script being written), the
// strings in code given to python, perl, awk, node, git -c … — is refused
// only when it holds a dangerous command. Before that,
//
//   - JSON escapes are decoded (\u0072m is rm);
//   - fullwidth letters, mathematical letters and the Cyrillic and Greek
//     look-alikes of Latin letters are read as the Latin letters, Unicode
//     spaces as spaces, look-alike dashes and slashes as - and /, and
//     invisible characters (zero-width spaces, joiners, bidirectional
//     controls, soft hyphens) are dropped; a control character other than
//     tab, newline and carriage return refuses the line;
//   - quotes and backslashes are removed the way the shell removes them
//     ("rm", r"m", \rm, $'\x72m' are rm), brace expansion is expanded
//     ({rm,-rf,/} is rm -rf /) and $IFS separates words;
//   - a leading path is dropped from a command's name (/bin/rm is rm, and
//     zsh's =rm too), case is ignored (RM is rm), and assignments before
//     it (FOO=1 rm) are skipped — their values are checked as text that may
//     be run (PROMPT_COMMAND=…), as are trap's arguments; a name that is a
//     pattern (/bin/r?) is refused;
//   - short options are read one by one, in any order, joined or apart
//     (-rf, -fr, -r -f), and long ones by any abbreviation (--rec).
//
// Refused by default:
//
//   - rm recursive on / or a top-level system directory (/etc, /usr …), on
//     ~, $HOME or /home/NAME, on a path made only of an expansion ($X,
//     $X/*), or given its paths by xargs or find; rm --no-preserve-root;
//     find / -delete;
//   - mkfs (and mkfs.*, mke2fs, mkswap, wipefs);
//   - dd of=/dev/… (other than /dev/null, /dev/zero, /dev/stdout,
//     /dev/stderr); writing to a disk device (/dev/sd…, /dev/nvme…,
//     /dev/hd…, /dev/vd…, /dev/mmcblk… …) by redirection, tee, cp or mv;
//   - a function that starts copies of itself: the fork bomb :(){ :|:& };:
//   - chmod, chown and chgrp on / or a top-level system directory;
//   - shutdown, reboot, halt, poweroff, systemctl poweroff/reboot/halt/kexec,
//     init or telinit 0 and 6;
//   - piping anything into a shell (curl … | sh, wget -O- … | sudo bash),
//     a shell or source given a process substitution (bash <(curl …)), and
//     sh -c or eval given code made by a command substitution;
//   - a command whose name is computed when it runs ($CMD, $(which rm));
//   - a line the reader cannot read (an unterminated quote, an unbalanced
//     parenthesis), or one too costly to check: brace expansion past 256
//     words or in a word over 4096 characters, a command of more than 4096
//     words, nesting past 64 levels (8 of sh -c and eval), re-reading past
//     16 times the line's length, more than 256 functions.
//
// Each "deny" pattern adds a rule: a command's words, the first its name
// (compared as above), the others options or arguments that must all be
// present, in any order ("git push --force" refuses git push -v --force
// origin; "rm -r -f" refuses rm -fr). The defaults always apply.
//
// With "allow", the first word of every command the line would run — in
// substitutions and sh -c code too — must be one of the listed names,
// exactly (a path is not dropped: "ls" does not allow /tmp/ls), and the
// defaults still apply. Listing a shell, env, sudo, xargs, find or another
// command that runs commands allows whatever it runs.
//
// Denied calls fail with -32030 and the reason; nothing is sent. Calls of
// other tools pass unchanged.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o shell-guard.wasm .
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/snodo/snodo/abi/guest"
)

type config struct {
	Tools    []string `json:"tools"`
	Argument string   `json:"argument"`
	Deny     []string `json:"deny"`
	Allow    []string `json:"allow"`
}

var (
	loaded   bool
	cfg      config
	patterns []pattern
	allow    map[string]bool
)

func init() {
	guest.SetName("shell-guard")
	guest.InterceptRequests(guard, "tools/call")
}

func main() {}

func setup() error {
	if loaded {
		return nil
	}
	c, err := loadConfig(guest.ConfigBytes())
	if err != nil {
		return err
	}
	cfg, loaded = c, true
	return nil
}

// loadConfig reads and checks the configuration, and compiles its
// patterns and allow-list.
func loadConfig(b []byte) (config, error) {
	var c config
	if len(bytes.TrimSpace(b)) > 0 && string(bytes.TrimSpace(b)) != "null" {
		d := json.NewDecoder(bytes.NewReader(b))
		d.DisallowUnknownFields()
		if err := d.Decode(&c); err != nil {
			return c, fmt.Errorf(`shell-guard: configuration: %v (want {"tools": [names], "argument": name, "deny": [patterns], "allow": [names]})`, err)
		}
	}
	if c.Tools == nil {
		c.Tools = []string{"run_command", "shell", "exec"}
	}
	if len(c.Tools) == 0 || slices.Contains(c.Tools, "") {
		return c, errors.New(`shell-guard: "tools" must list the names of the shell-like tools (omit it for run_command, shell, exec)`)
	}
	if c.Argument == "" {
		c.Argument = "command"
	}
	patterns = nil
	for _, d := range c.Deny {
		p, err := compilePattern(d)
		if err != nil {
			return c, fmt.Errorf("shell-guard: deny pattern %q: %v", d, err)
		}
		patterns = append(patterns, p)
	}
	allow = nil
	if c.Allow != nil {
		allow = map[string]bool{}
		for _, a := range c.Allow {
			if a == "" || strings.ContainsAny(a, " \t\n") {
				return c, fmt.Errorf(`shell-guard: "allow" lists command names, one word each, not %q`, a)
			}
			allow[a] = true
		}
	}
	return c, nil
}

func guard(_ guest.Context, r guest.InterceptRequest) (guest.Decision, error) {
	if err := setup(); err != nil {
		return guest.Decision{}, err // fail closed: no policy, no call
	}
	var params struct {
		Name      *string                     `json:"name"`
		Arguments map[string]*json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(r.Params, &params); err != nil || params.Name == nil {
		return guest.Decision{}, deny("tools/call params have no tool name")
	}
	name := *params.Name
	if !slices.ContainsFunc(cfg.Tools, func(t string) bool { return foldName(t) == foldName(name) }) {
		return guest.Pass(), nil
	}
	raw := params.Arguments[cfg.Argument]
	if raw == nil {
		return guest.Decision{}, deny("tool %s: argument %q is missing; it must be the command line, a string", name, cfg.Argument)
	}
	var line string
	if len(*raw) == 0 || (*raw)[0] != '"' || json.Unmarshal(*raw, &line) != nil {
		return guest.Decision{}, deny("tool %s: argument %q must be the command line, a string, not %s", name, cfg.Argument, kind(*raw))
	}
	// Arrays of strings among the other arguments (args, argv) are more
	// words of the command.
	keys := make([]string, 0, len(params.Arguments))
	for k := range params.Arguments {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		var words []string
		if v := params.Arguments[k]; k != cfg.Argument && v != nil && len(*v) > 0 && (*v)[0] == '[' && json.Unmarshal(*v, &words) == nil {
			for _, w := range words {
				line += " " + shellQuote(w)
			}
		}
	}
	if err := check(line); err != nil {
		return guest.Decision{}, deny("tool %s: command refused: %v", name, err)
	}
	return guest.Pass(), nil
}

// foldName is a tool name as a lenient server may match it: case folded,
// "_" and "-" dropped.
func foldName(s string) string {
	return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
}

// shellQuote quotes s as one shell word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func kind(raw json.RawMessage) string {
	switch c := raw[0]; {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == 'n':
		return "null"
	case c == 't' || c == 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

// deny is the reason a call is refused.
func deny(format string, args ...any) error {
	return &guest.Error{Code: -32602, Message: fmt.Sprintf(format, args...)}
}
