package main

import (
	"errors"
	"fmt"
	"strings"
)

// A reader of POSIX shell command lines, enough to find every simple
// command a line would run: words are unquoted the way the shell unquotes
// them ('…', "…", $'…' with its escapes, backslashes), command and process
// substitutions ($(…), `…`, <(…), >(…)) and ${…} are read as the nested
// command lines they are, brace expansion is expanded, $IFS splits words,
// and every separator (; & && || | |& newline, subshells and groups) ends
// a command. What it cannot read (an unterminated quote, an unbalanced
// parenthesis) is an error: the caller refuses the line.

// word is one word of a command, unquoted.
type word struct {
	text    string
	dynamic bool // holds an expansion whose value is known only when it runs
	leadDyn bool // starts with an expansion
	leadEnd int  // the end of the expansions text starts with, when leadDyn
	glob    bool // holds an unquoted * ? or [
	procSub bool // is a process substitution <(…) or >(…)
	subs    []*list
	braces  bool // holds unquoted brace-expansion characters
}

// redir is a redirection: its operator and target.
type redir struct {
	op     string
	target word
}

// command is a simple command: its words (assignments first), its
// redirections, or a subshell or group (sub).
type command struct {
	words  []word
	redirs []redir
	sub    *list // ( … ) or { … }
	fn     string
	// heredocs are the bodies of the command's here-documents.
	heredocs []string
}

// heredoc is a here-document whose body starts after the current line.
type heredoc struct {
	cmd   *command
	delim string
	tabs  bool // <<-: leading tabs are stripped
}

// pipeline is commands joined by | or |&.
type pipeline struct {
	cmds []*command
}

// list is the pipelines of a command line.
type list struct {
	pipes []*pipeline
	// comments are the comments' text: a shell with interactive comments
	// off (zsh's default) runs them as commands.
	comments []string
}

type parser struct {
	s       []rune
	i       int
	depth   int
	pending []heredoc
}

const maxDepth = 64

var errUnterminated = errors.New("unterminated quote or substitution")

// budget is what is left of the characters the checks of one line may
// read, reading its parts again included (the code of sh -c, strings in
// code, substitutions in ${…}); a line that needs more is refused.
var budget int

// errBudget refuses a line too costly to check.
var errBudget = errors.New("too long or too nested to check")

const (
	maxWords     = 4096 // words in one command
	maxBraceWord = 4096 // characters in a word brace expansion expands
)

func newParser(s string, depth int) (*parser, error) {
	if depth > maxDepth {
		return nil, errors.New("nested too deeply")
	}
	r := []rune(s)
	if budget -= len(r); budget < 0 {
		return nil, errBudget
	}
	return &parser{s: r, depth: depth}, nil
}

// parse reads the command line s.
func parse(s string) (*list, error) {
	p, err := newParser(s, 0)
	if err != nil {
		return nil, err
	}
	l, err := p.list(0)
	if err != nil {
		return nil, err
	}
	if p.i < len(p.s) {
		return nil, fmt.Errorf("unexpected %q", string(p.s[p.i]))
	}
	return l, nil
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\r' }

func isMeta(r rune) bool {
	return isSpace(r) || r == '\n' || r == ';' || r == '&' || r == '|' || r == '<' || r == '>' || r == '(' || r == ')'
}

func (p *parser) peek(k int) rune {
	if p.i+k < len(p.s) {
		return p.s[p.i+k]
	}
	return 0
}

// list reads pipelines up to EOF, or to the closing rune stop (')' or '`'),
// which it leaves unread.
func (p *parser) list(stop rune) (*list, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, errors.New("nested too deeply")
	}
	l := &list{}
	pl := &pipeline{}
	cmd := &command{}
	endCmd := func() {
		if len(cmd.words) > 0 || len(cmd.redirs) > 0 || cmd.sub != nil {
			pl.cmds = append(pl.cmds, cmd)
		}
		cmd = &command{}
	}
	endPipe := func() {
		endCmd()
		if len(pl.cmds) > 0 {
			l.pipes = append(l.pipes, pl)
		}
		pl = &pipeline{}
	}
	for {
		if p.i >= len(p.s) {
			if stop != 0 {
				return nil, errUnterminated
			}
			endPipe()
			return l, nil
		}
		r := p.s[p.i]
		switch {
		case r == stop:
			endPipe()
			return l, nil
		case isSpace(r):
			p.i++
		case r == '\\' && p.peek(1) == '\n':
			p.i += 2
		case r == '#':
			// A comment, to the end of the line.
			start := p.i + 1
			for p.i < len(p.s) && p.s[p.i] != '\n' {
				p.i++
			}
			l.comments = append(l.comments, string(p.s[start:p.i]))
		case r == '\n':
			p.i++
			p.heredocs()
			endPipe()
		case r == ';':
			p.i++
			endPipe()
		case r == '&':
			if p.peek(1) == '>' { // &> and &>>
				p.i++
				if err := p.redirect(cmd, "&"); err != nil {
					return nil, err
				}
				continue
			}
			p.i++
			if p.peek(0) == '&' {
				p.i++
			}
			endPipe()
		case r == '|':
			p.i++
			if p.peek(0) == '|' {
				p.i++
				endPipe()
				continue
			}
			if p.peek(0) == '&' {
				p.i++
			}
			endCmd()
		case (r == '<' || r == '>') && p.peek(1) == '(':
			w, err := p.word()
			if err != nil {
				return nil, err
			}
			cmd.words = append(cmd.words, w)
		case r == '<' || r == '>':
			if err := p.redirect(cmd, ""); err != nil {
				return nil, err
			}
		case r == '(':
			if err := p.paren(cmd, endPipe); err != nil {
				return nil, err
			}
		case r == ')':
			return nil, errors.New(`unexpected ")"`)
		default:
			if err := p.words(cmd, endPipe); err != nil {
				return nil, err
			}
		}
	}
}

// paren reads what starts at a "(": a function definition's "( )" after
// its name, or a subshell's list up to its ")".
func (p *parser) paren(cmd *command, endPipe func()) error {
	if len(cmd.words) > 0 {
		// name ( ) — a function definition.
		j := p.i + 1
		for j < len(p.s) && isSpace(p.s[j]) {
			j++
		}
		if j >= len(p.s) || p.s[j] != ')' || len(cmd.words) != 1 {
			return errors.New(`unexpected "("`)
		}
		p.i = j + 1
		cmd.fn = cmd.words[0].text
		endPipe()
		return nil
	}
	p.i++
	sub, err := p.list(')')
	if err != nil {
		return err
	}
	p.i++ // the ')'
	cmd.sub = sub
	return nil
}

// words reads one word of cmd and adds what it expands to.
func (p *parser) words(cmd *command, endPipe func()) error {
	w, err := p.word()
	if err != nil {
		return err
	}
	// An fd number right before a redirection is not a word.
	if p.i < len(p.s) && (p.s[p.i] == '<' || p.s[p.i] == '>') && isDigits(w.text) && !w.dynamic {
		return nil
	}
	ws, err := expandWord(w)
	if err != nil {
		return err
	}
	if len(cmd.words) == 0 && len(ws) == 1 && (ws[0].text == "{" || ws[0].text == "}") && !w.dynamic {
		// A group's braces: the commands inside are read as commands of
		// their own.
		endPipe()
		return nil
	}
	cmd.words = append(cmd.words, ws...)
	if len(cmd.words) > maxWords {
		return fmt.Errorf("a command has more than %d words", maxWords)
	}
	return nil
}

// heredocs reads the bodies of the pending here-documents, which start at
// p.i (the line after their commands), each up to its delimiter line.
func (p *parser) heredocs() {
	for _, h := range p.pending {
		var body []string
		for p.i < len(p.s) {
			end := indexRune(p.s, p.i, '\n')
			if end < 0 {
				end = len(p.s)
			}
			line := string(p.s[p.i:end])
			p.i = min(end+1, len(p.s))
			if h.tabs {
				line = strings.TrimLeft(line, "\t")
			}
			if line == h.delim {
				break
			}
			body = append(body, line)
		}
		h.cmd.heredocs = append(h.cmd.heredocs, strings.Join(body, "\n"))
	}
	p.pending = nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// redirect reads a redirection operator at p.i (after prefix, "&" for
// &>) and its target.
func (p *parser) redirect(cmd *command, prefix string) error {
	start := p.i
	r := p.s[p.i]
	p.i++
	for p.i < len(p.s) && (p.s[p.i] == r || p.s[p.i] == '|' || p.s[p.i] == '&' || (r == '<' && p.s[p.i] == '>')) && p.i-start < 3 {
		p.i++
	}
	if string(p.s[start:p.i]) == "<<" && p.peek(0) == '-' {
		p.i++
	}
	op := prefix + string(p.s[start:p.i])
	for p.i < len(p.s) && isSpace(p.s[p.i]) {
		p.i++
	}
	if p.i >= len(p.s) || isMeta(p.s[p.i]) {
		return fmt.Errorf("redirection %s has no target", op)
	}
	w, err := p.word()
	if err != nil {
		return err
	}
	cmd.redirs = append(cmd.redirs, redir{op, w})
	if op == "<<" || op == "<<-" {
		p.pending = append(p.pending, heredoc{cmd, w.text, op == "<<-"})
	}
	return nil
}

// word reads one word at p.i.
func (p *parser) word() (word, error) {
	var w word
	var b strings.Builder
	lit := func(r rune, quoted bool) {
		if !quoted {
			switch r {
			case '*', '?', '[':
				w.glob = true
			case '{':
				w.braces = true
				r = braceOpen
			case ',':
				r = braceComma
			case '}':
				r = braceClose
			}
		}
		b.WriteRune(r)
	}
	dyn := func(text string) {
		lead := b.Len() == 0 || w.leadDyn && b.Len() == w.leadEnd
		w.dynamic = true
		b.WriteString(text)
		if lead {
			w.leadDyn, w.leadEnd = true, b.Len()
		}
	}
	// Process substitution: the whole word.
	if (p.s[p.i] == '<' || p.s[p.i] == '>') && p.peek(1) == '(' {
		p.i += 2
		sub, err := p.list(')')
		if err != nil {
			return w, err
		}
		p.i++
		w.subs = append(w.subs, sub)
		w.procSub, w.dynamic, w.leadDyn = true, true, true
		w.text = "<(…)"
		w.leadEnd = len(w.text)
		return w, nil
	}
	for p.i < len(p.s) {
		r := p.s[p.i]
		if isMeta(r) {
			break
		}
		switch r {
		case '\\':
			p.i++
			if p.i >= len(p.s) {
				break
			}
			if p.s[p.i] != '\n' {
				lit(p.s[p.i], true)
			}
			p.i++
		case '\'':
			end := indexRune(p.s, p.i+1, '\'')
			if end < 0 {
				return w, errUnterminated
			}
			for _, c := range p.s[p.i+1 : end] {
				lit(c, true)
			}
			p.i = end + 1
		case '"':
			p.i++
			if err := p.doubleQuoted(&w, &b, dyn); err != nil {
				return w, err
			}
		case '`':
			p.i++
			if err := p.backquoted(&w, dyn); err != nil {
				return w, err
			}
		case '$':
			split, err := p.dollar(&w, &b, dyn, lit, false)
			if err != nil {
				return w, err
			}
			if split {
				// $IFS: the shell splits the word here.
				w.text = b.String()
				return w, nil
			}
		default:
			lit(r, false)
			p.i++
		}
	}
	w.text = b.String()
	return w, nil
}

func indexRune(s []rune, from int, r rune) int {
	for j := from; j < len(s); j++ {
		if s[j] == r {
			return j
		}
	}
	return -1
}

// doubleQuoted reads "…" after its opening quote.
func (p *parser) doubleQuoted(w *word, b *strings.Builder, dyn func(string)) error {
	for p.i < len(p.s) {
		r := p.s[p.i]
		switch r {
		case '"':
			p.i++
			return nil
		case '\\':
			if n := p.peek(1); n == '$' || n == '`' || n == '"' || n == '\\' || n == '\n' {
				if n != '\n' {
					b.WriteRune(n)
				}
				p.i += 2
				continue
			}
			b.WriteRune(r)
			p.i++
		case '`':
			p.i++
			if err := p.backquoted(w, dyn); err != nil {
				return err
			}
		case '$':
			if _, err := p.dollar(w, b, dyn, func(c rune, _ bool) { b.WriteRune(c) }, true); err != nil {
				return err
			}
		default:
			b.WriteRune(r)
			p.i++
		}
	}
	return errUnterminated
}

// backquoted reads `…` after its opening backquote, as a nested command
// line.
func (p *parser) backquoted(w *word, dyn func(string)) error {
	var inner strings.Builder
	for p.i < len(p.s) {
		r := p.s[p.i]
		if r == '`' {
			p.i++
			sub, err := parseNested(inner.String(), p.depth)
			if err != nil {
				return err
			}
			w.subs = append(w.subs, sub)
			dyn("$(…)")
			return nil
		}
		if r == '\\' && (p.peek(1) == '`' || p.peek(1) == '\\' || p.peek(1) == '$') {
			inner.WriteRune(p.peek(1))
			p.i += 2
			continue
		}
		inner.WriteRune(r)
		p.i++
	}
	return errUnterminated
}

func parseNested(s string, depth int) (*list, error) {
	q, err := newParser(s, depth)
	if err != nil {
		return nil, err
	}
	l, err := q.list(0)
	if err != nil {
		return nil, err
	}
	if q.i < len(q.s) {
		return nil, fmt.Errorf("unexpected %q", string(q.s[q.i]))
	}
	return l, nil
}

// dollar reads what starts with $ at p.i. It reports whether the word
// splits there ($IFS outside quotes).
func (p *parser) dollar(w *word, b *strings.Builder, dyn func(string), lit func(rune, bool), quoted bool) (bool, error) {
	n := p.peek(1)
	switch {
	case n == '(' && p.peek(2) == '(':
		// $(( … )): arithmetic, which may hold substitutions.
		p.i += 3
		start := p.i
		depth := 2
		for p.i < len(p.s) && depth > 0 {
			switch p.s[p.i] {
			case '(':
				depth++
			case ')':
				depth--
			}
			p.i++
		}
		if depth > 0 {
			return false, errUnterminated
		}
		if err := p.scanInner(w, string(p.s[start:p.i-2])); err != nil {
			return false, err
		}
		dyn("$((…))")
	case n == '(':
		p.i += 2
		sub, err := p.list(')')
		if err != nil {
			return false, err
		}
		p.i++
		w.subs = append(w.subs, sub)
		dyn("$(…)")
	case n == '{':
		p.i += 2
		start := p.i
		depth := 1
		for p.i < len(p.s) && depth > 0 {
			switch p.s[p.i] {
			case '{':
				depth++
			case '}':
				depth--
			case '\\':
				p.i++
			}
			p.i++
		}
		if depth > 0 {
			return false, errUnterminated
		}
		inner := string(p.s[start : p.i-1])
		if err := p.scanInner(w, inner); err != nil {
			return false, err
		}
		name := inner
		if k := strings.IndexAny(name, ":-=+?#%/^,@["); k >= 0 {
			name = name[:k]
		}
		if name == "IFS" && !quoted {
			return true, nil
		}
		dyn("$" + name)
	case n == '\'' && !quoted:
		p.i += 2
		for p.i < len(p.s) && p.s[p.i] != '\'' {
			if p.s[p.i] == '\\' && p.i+1 < len(p.s) {
				p.i++
				lit(p.ansiEscape(), true)
				continue
			}
			lit(p.s[p.i], true)
			p.i++
		}
		if p.i >= len(p.s) {
			return false, errUnterminated
		}
		p.i++
	case n == '"' && !quoted:
		p.i += 2
		return false, p.doubleQuoted(w, b, dyn)
	case n == '_' || n >= 'a' && n <= 'z' || n >= 'A' && n <= 'Z':
		p.i++
		start := p.i
		for p.i < len(p.s) && (p.s[p.i] == '_' || p.s[p.i] >= 'a' && p.s[p.i] <= 'z' || p.s[p.i] >= 'A' && p.s[p.i] <= 'Z' || p.s[p.i] >= '0' && p.s[p.i] <= '9') {
			p.i++
		}
		name := string(p.s[start:p.i])
		if name == "IFS" && !quoted {
			return true, nil
		}
		dyn("$" + name)
	case n != 0 && strings.ContainsRune("0123456789?#@*!$-", n):
		p.i += 2
		dyn("$" + string(n))
	default:
		lit('$', true)
		p.i++
	}
	return false, nil
}

// scanInner reads the substitutions inside ${…} or $((…)).
func (p *parser) scanInner(w *word, inner string) error {
	if !strings.ContainsAny(inner, "$`<>") {
		return nil
	}
	q, err := newParser(inner, p.depth+1)
	if err != nil {
		return err
	}
	for q.i < len(q.s) {
		if c := q.s[q.i]; isMeta(c) && !((c == '<' || c == '>') && q.peek(1) == '(') {
			q.i++
			continue
		}
		wd, err := q.word()
		if err != nil {
			return err
		}
		w.subs = append(w.subs, wd.subs...)
	}
	return nil
}

// ansiEscape decodes the escape of $'…' at p.i (after the backslash).
func (p *parser) ansiEscape() rune {
	c := p.s[p.i]
	p.i++
	hex := func(max int) rune {
		v, k := rune(0), 0
		for k < max && p.i < len(p.s) {
			d := p.s[p.i]
			switch {
			case d >= '0' && d <= '9':
				v = v*16 + d - '0'
			case d >= 'a' && d <= 'f':
				v = v*16 + d - 'a' + 10
			case d >= 'A' && d <= 'F':
				v = v*16 + d - 'A' + 10
			default:
				return v
			}
			p.i++
			k++
		}
		return v
	}
	switch c {
	case 'n':
		return '\n'
	case 't':
		return '\t'
	case 'r':
		return '\r'
	case 'a':
		return 7
	case 'b':
		return 8
	case 'e', 'E':
		return 27
	case 'f':
		return 12
	case 'v':
		return 11
	case 'x':
		return hex(2)
	case 'u':
		return hex(4)
	case 'U':
		return hex(8)
	case 'c':
		if p.i < len(p.s) {
			d := p.s[p.i]
			p.i++
			return d & 0x1f
		}
		return 'c'
	case '0', '1', '2', '3', '4', '5', '6', '7':
		v := c - '0'
		for k := 0; k < 2 && p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '7'; k++ {
			v = v*8 + p.s[p.i] - '0'
			p.i++
		}
		return v
	}
	return c
}

// Unquoted brace-expansion characters are kept in a word's text as these
// private-use runes until the word is expanded (fold replaces any in the
// input).
const (
	braceOpen  = '\uE000'
	braceComma = '\uE001'
	braceClose = '\uE002'
)

var unmark = strings.NewReplacer(string(braceOpen), "{", string(braceComma), ",", string(braceClose), "}")

// expandWord applies brace expansion ({a,b}) to w; the words it makes
// share w's substitutions. At most 256 words are made.
func expandWord(w word) ([]word, error) {
	if !w.braces {
		return []word{w}, nil
	}
	if len(w.text) > maxBraceWord {
		return nil, fmt.Errorf("a word with braces is longer than %d characters", maxBraceWord)
	}
	n := 0
	texts := braceExpand([]rune(w.text), &n, 0)
	if n >= 256 {
		return nil, errors.New("brace expansion makes 256 words or more")
	}
	out := make([]word, len(texts))
	for i, t := range texts {
		out[i] = w
		out[i].text, out[i].braces = unmark.Replace(string(t)), false
	}
	return out, nil
}

// braceExpand expands the {…,…} of s, at most 256 words in all.
func braceExpand(s []rune, n *int, depth int) [][]rune {
	if depth > 16 || *n >= 256 {
		*n++
		return [][]rune{s}
	}
	for i, r := range s {
		if r != braceOpen {
			continue
		}
		level, commas := 0, []int{}
		for j := i; j < len(s); j++ {
			switch s[j] {
			case braceOpen:
				level++
			case braceComma:
				if level == 1 {
					commas = append(commas, j)
				}
			case braceClose:
				level--
			}
			if level > 0 {
				continue
			}
			if len(commas) == 0 {
				break
			}
			var out [][]rune
			prev := i + 1
			for _, c := range append(commas, j) {
				t := append(append(append([]rune{}, s[:i]...), s[prev:c]...), s[j+1:]...)
				prev = c + 1
				out = append(out, braceExpand(t, n, depth+1)...)
				if *n >= 256 {
					break
				}
			}
			return out
		}
	}
	*n++
	return [][]rune{s}
}
