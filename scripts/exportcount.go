//go:build ignore

// exportcount counts a package's exported API the way its go doc index shows
// it: exported top-level consts, vars, funcs and types (each name of a
// grouped spec counted), plus exported methods of exported types (declared
// methods and the methods of exported interface types). Test files are
// skipped. Usage: go run scripts/exportcount.go ./redislock [-v]
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strings"
)

func main() {
	dir := os.Args[1]
	verbose := len(os.Args) > 2 && os.Args[2] == "-v"
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var names []string
	counts := map[string]int{}
	add := func(kind, name string) {
		names = append(names, kind+" "+name)
		counts[kind]++
	}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if !d.Name.IsExported() {
						continue
					}
					if d.Recv == nil {
						add("func", d.Name.Name)
						continue
					}
					t := d.Recv.List[0].Type
					if s, ok := t.(*ast.StarExpr); ok {
						t = s.X
					}
					if ix, ok := t.(*ast.IndexExpr); ok {
						t = ix.X
					}
					if id, ok := t.(*ast.Ident); ok && id.IsExported() {
						add("method", id.Name+"."+d.Name.Name)
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.ValueSpec:
							for _, n := range s.Names {
								if n.IsExported() {
									add(strings.ToLower(d.Tok.String()), n.Name)
								}
							}
						case *ast.TypeSpec:
							if !s.Name.IsExported() {
								continue
							}
							add("type", s.Name.Name)
							if it, ok := s.Type.(*ast.InterfaceType); ok {
								for _, m := range it.Methods.List {
									for _, n := range m.Names {
										if n.IsExported() {
											add("method", s.Name.Name+"."+n.Name)
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	sort.Strings(names)
	if verbose {
		for _, n := range names {
			fmt.Println(n)
		}
	}
	fmt.Printf("%d exported names (const %d, var %d, func %d, type %d, method %d)\n",
		len(names), counts["const"], counts["var"], counts["func"], counts["type"], counts["method"])
}
