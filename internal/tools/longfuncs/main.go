// Command longfuncs reports the Go functions longer than a limit, so that
// none grows past it unnoticed (`make vet` runs it).
//
//	longfuncs [-max 120] [-skip dir,dir] [dir ...]
//
// It walks each directory given (the current one by default) with the
// directories below it, and reads every non-test .go file there, as text
// (build tags do not matter). It passes over directories named testdata or
// vendor, those whose name starts with "." or "_", and nested modules (a
// directory below a root that has a go.mod of its own). A directory of -skip
// is passed over itself, not the directories below it.
//
// A function's length runs from its func keyword to its closing brace,
// both lines counted; its doc comment is not. Function literals count in
// the function that holds them. Generated files (a "Code generated … DO NOT
// EDIT." line) are not read, and a function whose doc comment holds the
// line
//
//	//longfunc:table
//
// is genuine table code (one case or entry a line, no logic to split) and
// may be longer.
//
// Each function over the limit is printed as "file:line: name is N lines
// (limit M)", and the command exits with status 1; with none, it prints
// nothing and exits 0.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// tableDirective marks a function as table code.
const tableDirective = "//longfunc:table"

// long is one function over the limit.
type long struct {
	pos   token.Position
	name  string
	lines int
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("longfuncs", flag.ContinueOnError)
	fl.SetOutput(stderr)
	limit := fl.Int("max", 120, "the most lines a function may have")
	skip := fl.String("skip", "", "comma-separated directories whose own files are not read (not those below them)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if *limit < 1 {
		fmt.Fprintf(stderr, "longfuncs: -max %d: the limit must be at least 1 line\n", *limit)
		return 2
	}
	roots := fl.Args()
	if len(roots) == 0 {
		roots = []string{"."}
	}
	skipped := map[string]bool{}
	for _, d := range strings.Split(*skip, ",") {
		if d = strings.TrimSpace(d); d != "" {
			skipped[filepath.Clean(d)] = true
		}
	}
	var found []long
	for _, root := range roots {
		got, err := scan(filepath.Clean(root), skipped, *limit)
		if err != nil {
			fmt.Fprintln(stderr, "longfuncs:", err)
			return 2
		}
		found = append(found, got...)
	}
	sort.Slice(found, func(i, j int) bool {
		a, b := found[i].pos, found[j].pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Line < b.Line
	})
	for _, l := range found {
		fmt.Fprintf(stdout, "%s:%d: %s is %d lines (limit %d)\n", l.pos.Filename, l.pos.Line, l.name, l.lines, *limit)
	}
	if len(found) > 0 {
		fmt.Fprintf(stderr, "longfuncs: %d function(s) over %d lines: split each along its concerns, or mark genuine table code with a %s line in its doc comment\n", len(found), *limit, tableDirective)
		return 1
	}
	return 0
}

// scan returns the functions over limit in the non-test Go files below root.
func scan(root string, skipped map[string]bool, limit int) ([]long, error) {
	if _, err := os.Stat(root); err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var found []long
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			name := d.Name()
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a module of its own
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || skipped[filepath.Dir(path)] {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		found = append(found, longIn(fset, f, limit)...)
		return nil
	})
	return found, err
}

// longIn returns the functions of f over limit.
func longIn(fset *token.FileSet, f *ast.File, limit int) []long {
	var found []long
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || isTable(fd.Doc) {
			continue
		}
		start := fset.Position(fd.Pos())
		n := fset.Position(fd.End()).Line - start.Line + 1
		if n > limit {
			found = append(found, long{pos: start, name: funcName(fd), lines: n})
		}
	}
	return found
}

// isTable reports whether doc holds the table directive on a line of its own.
func isTable(doc *ast.CommentGroup) bool {
	if doc == nil {
		return false
	}
	for _, c := range doc.List {
		if strings.TrimSpace(c.Text) == tableDirective {
			return true
		}
	}
	return false
}

// funcName is fd's name, with its receiver's type for a method:
// "Conn.await", "main".
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr: // a generic receiver: Core[C]
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}
