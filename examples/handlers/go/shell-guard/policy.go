package main

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// check refuses the command line s when a command it would run is
// dangerous or, with an allow-list, not allowed.
func check(s string) error {
	f, err := fold(s)
	if err != nil {
		return err
	}
	budget = 16*len(f) + 1<<20
	name, err := forkBomb(f)
	if err != nil {
		return err
	}
	if name != "" {
		return fmt.Errorf("function %s starts copies of itself (a fork bomb)", name)
	}
	return checkLine(f, 0)
}

func checkLine(s string, depth int) error {
	if depth > 8 {
		return errors.New("code nested too deeply in sh -c or eval")
	}
	l, err := parse(s)
	if errors.Is(err, errBudget) {
		return err // not soft: a part too costly to check is not let through
	}
	if err != nil {
		return softError{fmt.Errorf("cannot be read as a shell command line: %v", err)}
	}
	return checkList(l, depth)
}

// softError is a refusal for what cannot be known (a line that cannot be
// read, a command name computed when it runs) rather than for a dangerous
// command.
type softError struct{ error }

// softCheck checks s, text that may or may not be run as commands (a
// comment, a here-document, a string in another language's code): it is
// refused only for a dangerous command it holds.
func softCheck(s string, depth int) error {
	err := checkLine(s, depth+1)
	if _, soft := err.(softError); soft {
		return nil
	}
	return err
}

func checkList(l *list, depth int) error {
	for _, c := range l.comments {
		if err := softCheck(c, depth); err != nil {
			return fmt.Errorf("a comment holds a command a shell may run: %v", err)
		}
	}
	for _, pl := range l.pipes {
		for i, c := range pl.cmds {
			if err := checkCommand(c, depth); err != nil {
				return err
			}
			if i > 0 {
				if sh := shellStage(c); sh != "" {
					if from := firstDownloader(pl.cmds[:i]); from != "" {
						return fmt.Errorf("pipes a download into a shell (%s | %s)", from, sh)
					}
					return fmt.Errorf("pipes data into a shell (| %s): what it runs cannot be checked", sh)
				}
			}
		}
	}
	return nil
}

var (
	shells      = set("sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish", "csh", "tcsh", "yash", "busybox")
	downloaders = set("curl", "wget", "fetch", "aria2c", "http", "https", "lwp-request", "ftp", "nc", "ncat", "socat")
	// wrappers run the command of their arguments.
	wrappers = set("sudo", "doas", "env", "nohup", "nice", "ionice", "timeout", "time", "command", "builtin",
		"exec", "stdbuf", "xargs", "find", "busybox", "chroot", "setsid", "strace", "ltrace", "unbuffer",
		"flock", "chrt", "taskset", "caffeinate", "watch", "ssh", "docker", "podman", "kubectl",
		"coproc", "noglob", "nocorrect", "pkexec", "run0", "systemd-run", "setpriv", "unshare", "nsenter",
		"firejail", "fakeroot", "parallel", "script", "expect")
	// interpreters run code of other languages, which may run commands:
	// the strings in it are checked.
	interpreters = set("python", "python2", "python3", "perl", "ruby", "node", "nodejs", "deno", "bun", "php",
		"lua", "awk", "gawk", "mawk", "nawk", "tclsh", "osascript", "pwsh", "powershell", "git", "tar",
		"vim", "nvim", "vi", "ex", "emacs", "make", "rsync", "scp", "less", "man", "zip")
	// known are the other commands with rules of their own.
	known = set("rm", "mkfs", "dd", "tee", "cp", "mv", "install", "chmod", "chown", "chgrp", "systemctl", "init",
		"telinit", "eval", "source", ".", "su", "runuser", "alias", "trap", "find", "xargs")
	// reserved words that may start a command.
	reserved     = set("if", "then", "else", "elif", "do", "while", "until", "!")
	power        = set("shutdown", "reboot", "halt", "poweroff")
	formatters   = set("mke2fs", "mkswap", "wipefs", "mkdosfs", "newfs")
	systemDirs   = set("bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "opt", "proc", "root", "sbin", "srv", "sys", "usr", "var", "users", "system", "applications", "library", "private")
	safeDevices  = set("/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/tty")
	diskPrefixes = []string{"sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "dm-", "md", "mapper/", "loop", "sr", "nbd", "rdisk", "root"}
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// cmdName is the name a command word is compared by: without its
// directory, in lower case.
func cmdName(w word) string {
	// =rm is zsh's path of rm.
	return strings.ToLower(path.Base(strings.TrimLeft(w.text, "=")))
}

// globName refuses a command name with glob characters that may match a
// command the checks know (/bin/r? is /bin/rm); top, a command's own
// name rather than a word behind a wrapper, refuses any glob but [ and [[.
func globName(w word, top bool) error {
	if !w.glob || w.text == "[" || w.text == "[[" {
		return nil
	}
	pat := strings.ToLower(path.Base(strings.TrimLeft(w.text, "=")))
	for _, names := range []map[string]bool{known, shells, wrappers, interpreters, power, formatters, downloaders} {
		var matched []string
		for n := range names {
			if ok, _ := path.Match(pat, n); ok {
				matched = append(matched, n)
			}
		}
		if len(matched) > 0 {
			slices.Sort(matched)
			return fmt.Errorf("the command name %s may match %s", w.text, strings.Join(matched, ", "))
		}
	}
	if top {
		return softError{fmt.Errorf("the command name %s is a pattern, matched when it runs", w.text)}
	}
	return nil
}

// argv returns the words of c after its reserved words and assignments.
func argv(c *command) []word {
	ws := c.words
	for len(ws) > 0 && !ws[0].dynamic && reserved[ws[0].text] {
		ws = ws[1:]
	}
	for len(ws) > 0 && isAssignment(ws[0].text) {
		ws = ws[1:]
	}
	return ws
}

func isAssignment(s string) bool {
	eq := strings.IndexByte(s, '=')
	if eq <= 0 {
		return false
	}
	name := strings.TrimSuffix(s[:eq], "+")
	for i, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return name != ""
}

// shellStage names the shell a pipeline stage runs (through wrappers, in
// a subshell or group), or "".
func shellStage(c *command) string {
	if c.sub != nil {
		for _, pl := range c.sub.pipes {
			for _, sc := range pl.cmds {
				if sh := shellStage(sc); sh != "" {
					return sh
				}
			}
		}
		return ""
	}
	ws := argv(c)
	for i := range ws {
		n := cmdName(ws[i])
		if shells[n] || n == "source" || n == "." || n == "eval" {
			return n
		}
		if i == 0 && !wrappers[n] {
			return ""
		}
	}
	return ""
}

// firstDownloader names the first downloader among cmds, or "".
func firstDownloader(cmds []*command) string {
	for _, c := range cmds {
		if c.sub != nil {
			for _, pl := range c.sub.pipes {
				if d := firstDownloader(pl.cmds); d != "" {
					return d
				}
			}
			continue
		}
		for _, w := range argv(c) {
			if n := cmdName(w); downloaders[n] {
				return n
			}
		}
	}
	return ""
}

// hasDownloader reports whether a command of l downloads.
func hasDownloader(l *list) bool {
	for _, pl := range l.pipes {
		if firstDownloader(pl.cmds) != "" {
			return true
		}
	}
	return false
}

func checkCommand(c *command, depth int) error {
	if c.sub != nil {
		if err := checkList(c.sub, depth); err != nil {
			return err
		}
	}
	for _, w := range c.words {
		for _, s := range w.subs {
			if err := checkList(s, depth); err != nil {
				return err
			}
		}
	}
	for _, r := range c.redirs {
		for _, s := range r.target.subs {
			if err := checkList(s, depth); err != nil {
				return err
			}
		}
		if strings.Contains(r.op, ">") && isDisk(r.target.text) {
			return fmt.Errorf("writes to the disk device %s", r.target.text)
		}
	}
	ws := argv(c)
	if sh := shellStage(c); sh != "" {
		// A here-string or here-document given to a shell is code.
		for _, r := range c.redirs {
			if r.op == "<<<" {
				if err := checkLine(r.target.text, depth+1); err != nil {
					return err
				}
			}
		}
		for _, body := range c.heredocs {
			if err := checkLine(body, depth+1); err != nil {
				return fmt.Errorf("a here-document given to %s: %v", sh, err)
			}
		}
	} else {
		// A here-document's lines may become a script, and $(…) in one
		// runs; given to an interpreter, it is code.
		interp := len(ws) > 0 && interpreters[cmdName(ws[0])]
		for _, r := range c.redirs {
			if r.op == "<<<" && interp {
				if err := checkEmbedded(r.target.text, depth); err != nil {
					return fmt.Errorf("a here-string given to %s holds a dangerous command: %v", cmdName(ws[0]), err)
				}
			}
		}
		for _, body := range c.heredocs {
			if interp {
				if err := checkEmbedded(body, depth); err != nil {
					return fmt.Errorf("a here-document given to %s holds a dangerous command: %v", cmdName(ws[0]), err)
				}
			}
			for _, line := range strings.Split(body, "\n") {
				if err := softCheck(line, depth); err != nil {
					return fmt.Errorf("a here-document holds a dangerous command: %v", err)
				}
			}
		}
	}
	if len(ws) == 0 {
		for _, w := range c.words {
			if _, v, ok := strings.Cut(w.text, "="); ok && strings.ContainsAny(v, " \t$`;|&") {
				if err := softCheck(v, depth); err != nil {
					return fmt.Errorf("an assignment holds a dangerous command: %v", err)
				}
			}
		}
		return nil
	}
	if ws[0].dynamic {
		return softError{fmt.Errorf("the command name %s is computed when it runs", ws[0].text)}
	}
	if err := globName(ws[0], true); err != nil {
		return err
	}
	// Assignments' values may be run later ($X, PROMPT_COMMAND, ${X@P}).
	for _, w := range c.words[:len(c.words)-len(ws)] {
		if _, v, ok := strings.Cut(w.text, "="); ok && strings.ContainsAny(v, " \t$`;|&") {
			if err := softCheck(v, depth); err != nil {
				return fmt.Errorf("an assignment holds a dangerous command: %v", err)
			}
		}
	}
	if allow != nil && !allow[ws[0].text] {
		return softError{fmt.Errorf(`command %q is not in "allow"`, ws[0].text)}
	}
	if err := checkArgv(ws, false, depth); err != nil {
		return err
	}
	if wrappers[cmdName(ws[0])] {
		viaArgs := cmdName(ws[0]) == "xargs"
		if cmdName(ws[0]) == "find" {
			viaArgs = findFromDanger(ws[1:])
		}
		for k := 1; k < len(ws); k++ {
			if ws[k].dynamic {
				continue // an option's value, as likely as a command
			}
			if strings.ContainsAny(ws[k].text, " \t\n") {
				// A command given as one string (env -S, watch, ssh).
				if err := softCheck(joinText(ws[k:]), depth); err != nil {
					return err
				}
			}
			if err := checkArgv(ws[k:], viaArgs, depth); err != nil {
				return err
			}
		}
	}
	return nil
}

func joinText(ws []word) string {
	t := make([]string, len(ws))
	for i, w := range ws {
		t[i] = w.text
	}
	return strings.Join(t, " ")
}

// findFromDanger reports whether find starts at a dangerous path.
func findFromDanger(args []word) bool {
	for _, a := range args {
		if strings.HasPrefix(a.text, "-") || a.text == "(" || a.text == "!" {
			return false
		}
		if dangerousTarget(a) {
			return true
		}
	}
	return false
}

// checkArgv checks one command: its name and arguments. viaArgs says a
// wrapper (xargs, find) adds paths to it that cannot be seen.
func checkArgv(ws []word, viaArgs bool, depth int) error {
	if ws[0].dynamic {
		return softError{fmt.Errorf("the command name %s is computed when it runs", ws[0].text)}
	}
	if err := globName(ws[0], false); err != nil {
		return err
	}
	name := cmdName(ws[0])
	args := ws[1:]
	switch {
	case name == "rm":
		return checkRm(args, viaArgs)
	case name == "mkfs" || strings.HasPrefix(name, "mkfs.") || formatters[name]:
		return fmt.Errorf("%s formats a filesystem", name)
	case name == "dd":
		for _, a := range args {
			if t, ok := strings.CutPrefix(a.text, "of="); ok && (strings.HasPrefix(path.Clean(t), "/dev/") && !safeDevices[path.Clean(t)] || a.dynamic) {
				return fmt.Errorf("dd writes to the device %s", t)
			}
		}
	case name == "tee" || name == "cp" || name == "mv" || name == "install":
		for _, a := range args {
			if isDisk(a.text) {
				return fmt.Errorf("%s writes to the disk device %s", name, a.text)
			}
		}
	case name == "chmod" || name == "chown" || name == "chgrp":
		for _, a := range args {
			if !strings.HasPrefix(a.text, "-") && rootish(a) {
				return fmt.Errorf("%s on %s changes the whole system", name, a.text)
			}
		}
	case power[name]:
		return fmt.Errorf("%s stops the machine", name)
	case name == "systemctl":
		for _, a := range args {
			switch a.text {
			case "poweroff", "reboot", "halt", "kexec", "soft-reboot":
				return fmt.Errorf("systemctl %s stops the machine", a.text)
			}
		}
	case name == "init" || name == "telinit":
		for _, a := range args {
			if a.text == "0" || a.text == "6" {
				return fmt.Errorf("%s %s stops the machine", name, a.text)
			}
		}
	case name == "find":
		hasDelete := false
		for _, a := range args {
			hasDelete = hasDelete || a.text == "-delete"
		}
		if hasDelete && findFromDanger(args) {
			return errors.New("find -delete on the whole system or a home directory")
		}
	case name == "eval":
		var code []string
		for _, a := range args {
			if len(a.subs) > 0 {
				return errors.New("eval of code made by a command substitution")
			}
			code = append(code, a.text)
		}
		if err := checkLine(strings.Join(code, " "), depth+1); err != nil {
			return err
		}
	case name == "source" || name == ".":
		for _, a := range args {
			if a.procSub || len(a.subs) > 0 {
				return fmt.Errorf("%s runs code from a substitution", name)
			}
		}
	case shells[name] || name == "su" || name == "runuser":
		if err := checkShell(name, args, depth); err != nil {
			return err
		}
	case name == "trap":
		for _, a := range args {
			if err := softCheck(a.text, depth); err != nil {
				return fmt.Errorf("trap: %v", err)
			}
		}
	case name == "alias":
		for _, a := range args {
			if _, code, ok := strings.Cut(a.text, "="); ok {
				if err := checkLine(code, depth+1); err != nil {
					return fmt.Errorf("alias: %v", err)
				}
			}
		}
	case interpreters[name]:
		for _, a := range args {
			if err := checkEmbedded(a.text, depth); err != nil {
				return fmt.Errorf("%s is given code with a dangerous command: %v", name, err)
			}
		}
	}
	for _, p := range patterns {
		if p.match(name, args) {
			return fmt.Errorf("matches the deny pattern %q", p.text)
		}
	}
	return nil
}

// literals returns the contents of the string literals of code in most
// languages ("…", '…', `…`, with backslash escapes), at most max.
func literals(s string, max int) []string {
	var out []string
	for i := 0; i < len(s) && len(out) < max; i++ {
		q := s[i]
		if q != '"' && q != '\'' && q != '`' {
			continue
		}
		j := i + 1
		for j < len(s) && s[j] != q {
			if s[j] == '\\' && q != '`' {
				j++
			}
			j++
		}
		if j >= len(s) {
			break
		}
		out = append(out, s[i+1:j])
		i = j
	}
	return out
}

// checkEmbedded checks an argument of an interpreter: the argument, what
// follows its first = or !, and each string literal in it, are checked as
// command lines that may be run (system("rm -rf /"), core.pager=…,
// --to-command=…, -c '!…').
func checkEmbedded(s string, depth int) error {
	if budget -= len(s); budget < 0 {
		return errBudget
	}
	cands := []string{s}
	if _, v, ok := strings.Cut(s, "="); ok {
		cands = append(cands, v)
	}
	if _, v, ok := strings.Cut(s, "!"); ok {
		cands = append(cands, v)
	}
	for _, lit := range literals(s, 64) {
		cands = append(cands, unescape(lit))
	}
	for _, c := range cands {
		if err := softCheck(c, depth); err != nil {
			return err
		}
	}
	return nil
}

// unescape removes the backslashes of \", \' and \\ in a string literal.
func unescape(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(`"'\\`, s[i+1]) >= 0 {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// checkShell checks a shell's arguments: the code of -c is checked as a
// command line of its own.
func checkShell(name string, args []word, depth int) error {
	code := false
	for _, a := range args {
		if a.procSub || (len(a.subs) > 0 && hasDownloaderIn(a.subs)) {
			return fmt.Errorf("%s runs code it downloads or reads from a substitution", name)
		}
		if code && (a.text == "--" || strings.HasPrefix(a.text, "-") || strings.HasPrefix(a.text, "+")) {
			continue // options after -c come before its code
		}
		if code {
			if len(a.subs) > 0 {
				return fmt.Errorf("%s -c runs code made by a command substitution", name)
			}
			return checkLine(a.text, depth+1)
		}
		if a.text == "--command" || strings.HasPrefix(a.text, "--command=") {
			if t, ok := strings.CutPrefix(a.text, "--command="); ok {
				return checkLine(t, depth+1)
			}
			code = true
			continue
		}
		if strings.HasPrefix(a.text, "-") && !strings.HasPrefix(a.text, "--") && strings.ContainsRune(a.text, 'c') {
			code = true
		}
	}
	return nil
}

func hasDownloaderIn(ls []*list) bool {
	for _, l := range ls {
		if hasDownloader(l) {
			return true
		}
	}
	return false
}

// checkRm refuses a recursive rm of the whole system or a home directory.
func checkRm(args []word, viaArgs bool) error {
	recursive := false
	var targets []word
	opts := true
	for _, a := range args {
		t := a.text
		switch {
		case opts && t == "--":
			opts = false
		case opts && strings.HasPrefix(t, "--") && len(t) > 2:
			long := strings.SplitN(t, "=", 2)[0]
			switch {
			case strings.HasPrefix("--recursive", long):
				recursive = true
			case strings.HasPrefix("--no-preserve-root", long) && len(long) > 4:
				return errors.New("rm --no-preserve-root")
			}
		case opts && strings.HasPrefix(t, "-") && len(t) > 1:
			if strings.ContainsAny(t[1:], "rR") {
				recursive = true
			}
		default:
			targets = append(targets, a)
		}
	}
	if !recursive {
		return nil
	}
	if viaArgs {
		return errors.New("rm -r of paths given by xargs or find")
	}
	for _, t := range targets {
		if dangerousTarget(t) {
			return fmt.Errorf("rm -r of %s deletes the whole system or a home directory", t.text)
		}
	}
	return nil
}

// rootish reports whether w names /, a top-level system directory, or
// what only an expansion names.
func rootish(w word) bool {
	if w.leadDyn && strings.Trim(w.text[w.leadEnd:], "/*.") == "" {
		return true
	}
	if w.dynamic {
		// The expansions may be empty.
		return rootishPath(placeholders.ReplaceAllString(w.text, ""), w.glob)
	}
	return rootishPath(w.text, w.glob)
}

// placeholders are the expansions in a word's text.
var placeholders = regexp.MustCompile(`\$\(\(…\)\)|\$\(…\)|<\(…\)|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9?#@*!$-]`)

func rootishPath(p string, glob bool) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	c := path.Clean(p)
	for {
		switch {
		case strings.HasSuffix(c, "/*"), strings.HasSuffix(c, "/.*"):
			c = path.Clean(c[:strings.LastIndexByte(c, '/')+1])
			continue
		}
		break
	}
	if c == "/" || c == "/*" {
		return true
	}
	first, rest, _ := strings.Cut(c[1:], "/")
	if rest != "" {
		return false
	}
	return systemDirs[strings.ToLower(first)] || glob
}

// dangerousTarget reports whether deleting w recursively deletes the
// whole system or a home directory.
func dangerousTarget(w word) bool {
	if w.text == "{}" {
		return false
	}
	if rootish(w) {
		return true
	}
	if strings.HasPrefix(w.text, "~") {
		_, rest, _ := strings.Cut(w.text, "/")
		return strings.Trim(rest, "/*.") == ""
	}
	// /home/NAME, /Users/NAME: a home directory.
	if strings.HasPrefix(w.text, "/") {
		parts := strings.Split(strings.Trim(path.Clean(w.text), "/"), "/")
		if len(parts) == 2 && (parts[0] == "home" || parts[0] == "Users") {
			return true
		}
	}
	return false
}

// isDisk reports whether p names a disk device.
func isDisk(p string) bool {
	c := path.Clean(p)
	dev, ok := strings.CutPrefix(c, "/dev/")
	if !ok {
		return false
	}
	for _, d := range diskPrefixes {
		if strings.HasPrefix(dev, d) {
			return true
		}
	}
	return false
}

// forkBomb returns the name of a function of s that starts copies of
// itself (name | name, name & name), or "".
func forkBomb(s string) (string, error) {
	compact := strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\n', '\r', '\'', '"', '\\':
			return -1
		}
		return r
	}, s)
	// The functions defined: name() and function name.
	seen := map[string]bool{}
	var names []string
	add := func(name string) {
		if name != "" && !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	for i := 0; ; {
		k := strings.Index(compact[i:], "()")
		if k < 0 {
			break
		}
		k += i
		j := k
		for j > i && !strings.ContainsRune(";&|(){}<>`$", rune(compact[j-1])) {
			j--
		}
		if name := strings.TrimPrefix(compact[j:k], "function"); name != "" {
			add(name)
		} else {
			add(compact[j:k])
		}
		i = k + 2
	}
	fields := strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(" \t\n\r;&|(){}", r) })
	for i := 0; i+1 < len(fields); i++ {
		if fields[i] == "function" {
			add(fields[i+1])
		}
	}
	if len(names) > 256 {
		return "", errors.New("defines more than 256 functions, too many to check")
	}
	if len(names) > 0 && strings.Contains(compact, "FUNCNAME") {
		return "$FUNCNAME", nil
	}
	for _, name := range names {
		for _, sep := range []string{"|", "|&", "&"} {
			if strings.Contains(compact, name+sep+name) {
				return name, nil
			}
		}
	}
	return "", nil
}

// pattern is a "deny" rule: a command name and the arguments it must all
// have.
type pattern struct {
	text string
	name string
	args []string
}

func compilePattern(s string) (pattern, error) {
	f, err := fold(s)
	if err != nil {
		return pattern{}, err
	}
	budget = 1 << 20
	l, err := parse(f)
	if err != nil {
		return pattern{}, err
	}
	if len(l.pipes) != 1 || len(l.pipes[0].cmds) != 1 || len(l.pipes[0].cmds[0].words) == 0 || len(l.pipes[0].cmds[0].redirs) > 0 {
		return pattern{}, errors.New("a pattern is one command: its name, then the options and arguments to refuse it with")
	}
	ws := l.pipes[0].cmds[0].words
	for _, w := range ws {
		if w.dynamic || len(w.subs) > 0 {
			return pattern{}, errors.New("a pattern holds literal words only")
		}
	}
	p := pattern{text: s, name: cmdName(ws[0])}
	for _, w := range ws[1:] {
		p.args = append(p.args, splitOpts(w.text)...)
	}
	return p, nil
}

// splitOpts splits a cluster of short options (-rf: -r, -f); other words
// are themselves.
func splitOpts(s string) []string {
	if len(s) > 2 && s[0] == '-' && s[1] != '-' {
		var out []string
		for _, r := range s[1:] {
			out = append(out, "-"+string(r))
		}
		return out
	}
	return []string{s}
}

func (p pattern) match(name string, args []word) bool {
	if name != p.name {
		return false
	}
	have := map[string]bool{}
	for _, a := range args {
		for _, o := range splitOpts(a.text) {
			have[o] = true
		}
	}
	for _, a := range p.args {
		if !have[a] {
			return false
		}
	}
	return true
}
