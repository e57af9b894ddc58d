package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/zeromicro/go-zero/tools/goctl/api/spec"
	"github.com/zeromicro/go-zero/tools/goctl/pkg/parser/api/ast"
	apiparser "github.com/zeromicro/go-zero/tools/goctl/pkg/parser/api/parser"
)

// site is where a route and its @doc properties are written. goctl's spec
// has no positions and sorts groups by name and routes by path, so the
// plugin reads them from goctl's syntax tree of the same files: the lines
// for its errors, the file order for its output.
type site struct {
	file    string         // the .api file, as errors show it
	line    int            // the route statement's line (post /orders ...)
	docLine int            // the @doc's line, or the route's without one
	props   map[string]int // the @doc properties, each with its line
	// twice names a @doc property written more than once (goctl keeps the
	// last), with its second line.
	twice     string
	twiceLine int
}

// at formats a position for an error: file:line.
func (s site) at(line int) string {
	return fmt.Sprintf("%s:%d", s.file, line)
}

// propLine is the line of the @doc property name, or the @doc's line.
func (s site) propLine(name string) int {
	if line, ok := s.props[name]; ok {
		return line
	}
	return s.docLine
}

// routeID identifies a route across goctl's spec and its syntax tree:
// goctl refuses two routes with the same method and path under one
// prefix.
func routeID(prefix, method, path string) string {
	return prefix + "\x00" + strings.ToLower(method) + "\x00" + path
}

// locate returns the sites of the routes of apiFile and of the files it
// imports, in the order they are written (an import's routes after the
// importing file's), keyed by routeID, and that order. show turns an
// absolute file name into the one errors use.
func locate(apiFile string, show func(string) string) (map[string]site, []string, error) {
	l := locator{sites: make(map[string]site), seen: make(map[string]bool), show: show}
	if err := l.file(apiFile); err != nil {
		return nil, nil, err
	}
	return l.sites, l.order, nil
}

type locator struct {
	sites map[string]site
	order []string
	seen  map[string]bool
	show  func(string) string
}

func (l *locator) file(name string) error {
	abs, err := filepath.Abs(name)
	if err != nil {
		return err
	}
	if l.seen[abs] {
		return nil
	}
	l.seen[abs] = true
	p := apiparser.New(abs, "")
	tree := p.Parse()
	if err := p.CheckErrors(); err != nil {
		return err
	}
	if tree == nil {
		return fmt.Errorf("%s: goctl's parser returned nothing", l.show(abs))
	}
	var imports []string
	for _, stmt := range tree.Stmts {
		switch stmt := stmt.(type) {
		case *ast.ImportLiteralStmt:
			imports = append(imports, importPath(abs, stmt.Value))
		case *ast.ImportGroupStmt:
			for _, v := range stmt.Values {
				imports = append(imports, importPath(abs, v))
			}
		case *ast.ServiceStmt:
			l.service(abs, stmt)
		}
	}
	for _, imp := range imports {
		if err := l.file(imp); err != nil {
			return err
		}
	}
	return nil
}

// importPath resolves an import as goctl does: relative to the importing
// file's folder.
func importPath(from string, value *ast.TokenNode) string {
	name := strings.ReplaceAll(value.Token.Text, `"`, "")
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(filepath.Dir(from), name)
}

func (l *locator) service(file string, svc *ast.ServiceStmt) {
	var prefix string
	if svc.AtServerStmt != nil {
		for _, kv := range svc.AtServerStmt.Values {
			if strings.TrimSuffix(kv.Key.Token.Text, ":") == spec.RoutePrefixKey {
				prefix = kv.Value.RawText()
			}
		}
	}
	for _, item := range svc.Routes {
		line := item.Route.Method.Token.Position.Line
		s := site{file: l.show(file), line: line, docLine: line, props: make(map[string]int)}
		switch doc := item.AtDoc.(type) {
		case *ast.AtDocGroupStmt:
			s.docLine = doc.AtDoc.Token.Position.Line
			for _, kv := range doc.Values {
				name := strings.TrimSuffix(kv.Key.Token.Text, ":")
				kvLine := kv.Key.Token.Position.Line
				// The first lock property written twice: another
				// property's repeat must not hide it.
				if _, ok := s.props[name]; ok && s.twice == "" && isLockProperty(name) {
					s.twice, s.twiceLine = name, kvLine
				}
				s.props[name] = kvLine
			}
		case *ast.AtDocLiteralStmt:
			s.docLine = doc.AtDoc.Token.Position.Line
		}
		id := routeID(prefix, item.Route.Method.Token.Text, item.Route.Path.Format(""))
		if _, ok := l.sites[id]; !ok {
			l.order = append(l.order, id)
		}
		l.sites[id] = s
	}
}
