// Command exportednames prints the number of exported identifiers of the Go
// package in each directory it is given (the current one by default).
//
// It reads the package's non-test files that build for the current GOOS and
// GOARCH (as go/build selects them) with go/doc and counts, each name once:
//   - exported constants and variables (every name of a declaration);
//   - exported functions, including constructors go/doc groups with a type;
//   - exported types;
//   - exported methods declared on exported types (methods promoted from
//     embedded fields and the methods of interface types are not counted).
//
// Struct fields are not counted. With -v it lists the names.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
)

func main() {
	verbose := flag.Bool("v", false, "list the names")
	flag.Parse()
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	for _, dir := range dirs {
		names, err := exported(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "exportednames:", err)
			os.Exit(1)
		}
		fmt.Printf("%s\t%d\n", dir, len(names))
		if *verbose {
			for _, n := range names {
				fmt.Println("\t" + n)
			}
		}
	}
}

func exported(dir string) ([]string, error) {
	bp, err := build.ImportDir(dir, 0)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range append(bp.GoFiles, bp.CgoFiles...) {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no Go package", dir)
	}
	p, err := doc.NewFromFiles(fset, files, "x")
	if err != nil {
		return nil, err
	}
	var names []string
	values := func(kind string, vs []*doc.Value) {
		for _, v := range vs {
			for _, n := range v.Names {
				if token.IsExported(n) {
					names = append(names, kind+" "+n)
				}
			}
		}
	}
	funcs := func(fs []*doc.Func) {
		for _, f := range fs {
			names = append(names, "func "+f.Name)
		}
	}
	values("const", p.Consts)
	values("var", p.Vars)
	funcs(p.Funcs)
	for _, t := range p.Types {
		names = append(names, "type "+t.Name)
		values("const", t.Consts)
		values("var", t.Vars)
		funcs(t.Funcs)
		for _, m := range t.Methods {
			if m.Level == 0 {
				names = append(names, "method "+t.Name+"."+m.Name)
			}
		}
	}
	sort.Strings(names)
	return names, nil
}
