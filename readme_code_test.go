package zerolock_test

import (
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/zerolock/zerolock/internal/testing/readmetest"
)

// readmeGoSources are the compiled Go files that the READMEs' ```go blocks
// quote: the Examples written for them, and the goctl-shaped example
// services that the "From goctl" section cites. Every code line of a block
// must be a line of one of them.
var readmeGoSources = []string{
	"middleware/example_readme_test.go",
	"middleware/example_refusal_test.go",
	"interceptor/example_readme_test.go",
	"interceptor/client_example_test.go",
	"httpclient/example_test.go",
	"redislock/example_readme_test.go",
	"example/api/internal/svc/servicecontext.go",
	"example/rpc/rpcserver/rpcserver.go",
}

// readmeGoSnippets are the stretches of a goctl api new project's Go
// files that the "From goctl" section shows: goctl-zerolock's
// TestFreshGoctlProject writes them into the files goctl generates, then
// builds and runs the project, so they compile there. Not whole files,
// they are scanned line by line; their lines back the READMEs' lines as
// readmeGoSources' do.
var readmeGoSnippets = []string{
	"goctl-zerolock/testdata/fresh/config.go.snippet",
	"goctl-zerolock/testdata/fresh/main-imports.go.snippet",
	"goctl-zerolock/testdata/fresh/main-use.go.snippet",
	"goctl-zerolock/testdata/fresh/main-group.go.snippet",
	"goctl-zerolock/testdata/fresh/servicecontext.go.snippet",
}

// TestReadmeGoBlocks keeps the READMEs' Go code compiling: every code line
// of the ```go blocks of each README (README.md and README-cn.md,
// readmetest.READMEs) must be a line of a file in readmeGoSources, which
// go vet and go test build, or of a snippet in readmeGoSnippets, which
// goctl-zerolock's tests build into a goctl project. Lines are compared as Go tokens, so spacing,
// gofmt's alignment and comments (a README line's trailing comment is
// prose for the reader, and README-cn.md's is in Chinese) do not count,
// and a comment-only line is prose. One spelling is folded:
// `import name "path"`, a declaration of its own in a snippet, matches the
// import spec `name "path"` in a grouped import. A placeholder such as
// `{ ... }` is no line of Go source, so it fails.
//
// The test fails, naming the README line, for a code line found in no
// source; for a source that has a build constraint (it might not be
// built) or does not parse; and for a source or snippet that no line of a
// README needs, so that the lists say what backs the READMEs.
func TestReadmeGoBlocks(t *testing.T) {
	sources := make(map[string]map[string]bool) // file -> token lines
	for _, name := range readmeGoSources {
		sources[name] = sourceLines(t, name)
	}
	for _, name := range readmeGoSnippets {
		sources[name] = snippetLines(t, name)
	}
	for _, readme := range readmetest.READMEs {
		t.Run(readme, func(t *testing.T) {
			checkReadmeGoLines(t, readme, sources)
		})
	}
}

// checkReadmeGoLines checks the ```go blocks of readme against sources,
// the token lines of each of readmeGoSources.
func checkReadmeGoLines(t *testing.T, readme string, sources map[string]map[string]bool) {
	lines := readmeGoLines(t, readme)
	if len(lines) == 0 {
		t.Fatalf("%s has no ```go block with code", readme)
	}
	used := make(map[string]bool)
	var missing int
	backers := append(slices.Clone(readmeGoSources), readmeGoSnippets...)
	for _, l := range lines {
		var found bool
		for _, name := range backers {
			if sources[name][l.tokens] || (l.importSpec != "" && sources[name][l.importSpec]) {
				found, used[name] = true, true
			}
		}
		if !found {
			missing++
			t.Errorf("%s:%d: %q is a line of no source in readmeGoSources or readmeGoSnippets", readme, l.number, l.text)
		}
	}
	if missing > 0 {
		t.Logf("%s's Go code must be real code, each line a line of one of\n\t%s\n"+
			"(an Example in an example_readme_test.go, say), so that building them builds it",
			readme, strings.Join(backers, "\n\t"))
	}
	for _, name := range backers {
		if !used[name] {
			t.Errorf("%s backs no line of %s's ```go blocks: drop it from its list", name, readme)
		}
	}
}

// A readmeLine is a code line of a ```go block of a README.
type readmeLine struct {
	number int    // 1-based line number in the README
	text   string // as written, trimmed
	tokens string // its Go tokens, see tokenLine
	// importSpec is tokens less the leading `import` for a single-spec
	// import declaration, and empty otherwise.
	importSpec string
}

// readmeGoLines returns the lines of path's ```go blocks that hold Go
// tokens: blank and comment-only lines are left out.
func readmeGoLines(t *testing.T, path string) []readmeLine {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		lines   []readmeLine
		inBlock bool
	)
	for i, line := range strings.Split(string(text), "\n") {
		switch trimmed := strings.TrimSpace(line); {
		case !inBlock:
			inBlock = trimmed == "```go"
		case strings.HasPrefix(trimmed, "```"):
			inBlock = false
		default:
			toks, err := tokenLine(line)
			if err != nil {
				t.Errorf("%s:%d: %q does not scan as Go: %v", path, i+1, trimmed, err)
				continue
			}
			if len(toks) == 0 {
				continue
			}
			l := readmeLine{number: i + 1, text: trimmed, tokens: strings.Join(toks, " ")}
			if toks[0] == "import" && (len(toks) == 2 || len(toks) == 3) && strings.HasPrefix(toks[len(toks)-1], `"`) {
				l.importSpec = strings.Join(toks[1:], " ")
			}
			lines = append(lines, l)
		}
	}
	if inBlock {
		t.Errorf("%s: a ```go block is not closed", path)
	}
	return lines
}

// sourceLines returns the token lines (see tokenLine) of a Go source file
// of the module, which must parse and carry no build constraint.
func sourceLines(t *testing.T, name string) map[string]bool {
	t.Helper()
	src, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if c.Pos() < f.Package && strings.HasPrefix(c.Text, "//go:build") {
				t.Errorf("%s has a build constraint, so it may not be built: it cannot back the READMEs' code", name)
			}
		}
	}

	byLine := make(map[int][]string)
	var s scanner.Scanner
	s.Init(fset.AddFile(name, -1, len(src)), src, func(pos token.Position, msg string) {
		t.Errorf("%s: %s", pos, msg)
	}, 0)
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if text, ok := tokenText(tok, lit); ok {
			line := fset.Position(pos).Line
			byLine[line] = append(byLine[line], text)
		}
	}
	lines := make(map[string]bool, len(byLine))
	for _, toks := range byLine {
		lines[strings.Join(toks, " ")] = true
	}
	return lines
}

// snippetLines returns the token lines (see tokenLine) of a snippet of Go
// source, scanned line by line.
func snippetLines(t *testing.T, name string) map[string]bool {
	t.Helper()
	src, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	lines := make(map[string]bool)
	for i, line := range strings.Split(string(src), "\n") {
		toks, err := tokenLine(line)
		if err != nil {
			t.Errorf("%s:%d: %v", name, i+1, err)
		}
		if len(toks) > 0 {
			lines[strings.Join(toks, " ")] = true
		}
	}
	return lines
}

// tokenLine returns the Go tokens of one line, comments and the
// semicolons Go would insert left out.
func tokenLine(line string) ([]string, error) {
	var (
		s    scanner.Scanner
		errs scanner.ErrorList
		toks []string
	)
	src := []byte(line)
	s.Init(token.NewFileSet().AddFile("", -1, len(src)), src, errs.Add, 0)
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if text, ok := tokenText(tok, lit); ok {
			toks = append(toks, text)
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return toks, nil
}

// tokenText is how a token is compared: its literal text for names and
// literals, its spelling otherwise. Semicolons Go inserts at a line's
// end are not tokens a reader sees, and are left out (ok false).
func tokenText(tok token.Token, lit string) (string, bool) {
	switch {
	case tok == token.SEMICOLON && lit == "\n":
		return "", false
	case tok == token.IDENT || tok.IsLiteral():
		return lit, true
	default:
		return tok.String(), true
	}
}
