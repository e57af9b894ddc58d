// Package readmetest reads the fenced blocks of the READMEs in tests, and
// runs their shell blocks (on unix), so that every command a README shows
// is run and its shown output checked, and the configuration it shows is
// the one tests load. A shell block's lines that start with "# " are what
// it prints, in order.
package readmetest

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/zeromicro/go-zero/core/conf"
)

// READMEs are the READMEs, relative to the repository root: README.md and
// its Chinese translation, README-cn.md. A test that reads a README reads
// each of them, so that the translation shows what runs, and the root
// package's TestReadmesShowTheSameCode holds the two to the same blocks.
var READMEs = []string{"README.md", "README-cn.md"}

// A Block is a fenced code block of a README.
type Block struct {
	// Line is the line number of the opening fence.
	Line int
	// Script is the block as written.
	Script string
	// Want is what the block prints: its lines that start with "# ", less
	// that prefix, in order.
	Want []string
}

// Blocks returns the ```sh blocks of the README at path whose script
// contains substr.
func Blocks(tb testing.TB, path, substr string) []Block {
	tb.Helper()
	return Fenced(tb, path, "sh", substr)
}

// Fenced returns the blocks of the README at path fenced as lang (```yaml,
// say) whose text contains substr. Their Want is for sh blocks.
func Fenced(tb testing.TB, path, lang, substr string) []Block {
	tb.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var (
		blocks []Block
		cur    *Block
		lines  []string
	)
	for i, line := range strings.Split(string(text), "\n") {
		switch {
		case cur == nil && line == "```"+lang:
			cur, lines = &Block{Line: i + 1}, nil
		case cur != nil && line == "```":
			cur.Script = strings.Join(lines, "\n") + "\n"
			if strings.Contains(cur.Script, substr) {
				blocks = append(blocks, *cur)
			}
			cur = nil
		case cur != nil:
			lines = append(lines, line)
			if want, ok := strings.CutPrefix(line, "# "); ok {
				cur.Want = append(cur.Want, want)
			}
		}
	}
	return blocks
}

// LoadYAML loads into v, with go-zero's conf package (defaults included),
// the one ```yaml block of the README at path that contains substr, so
// that a test runs the configuration the README shows. It fails the test
// unless exactly one block contains substr and it loads.
func LoadYAML(tb testing.TB, path, substr string, v any) {
	tb.Helper()
	blocks := Fenced(tb, path, "yaml", substr)
	if len(blocks) != 1 {
		tb.Fatalf("%s has %d yaml blocks with %q, want one", path, len(blocks), substr)
	}
	if err := conf.LoadFromYamlBytes([]byte(blocks[0].Script), v); err != nil {
		tb.Fatalf("%s:%d: %v", path, blocks[0].Line, err)
	}
}

// LoadYAMLSame loads into v, as LoadYAML does, the yaml block that contains
// substr of README.md under root, and that of every other of READMEs into
// a new value of v's type, and fails the test unless they all load to the
// same value: a test that runs README.md's configuration then runs every
// README's.
func LoadYAMLSame(tb testing.TB, root, substr string, v any) {
	tb.Helper()
	LoadYAML(tb, filepath.Join(root, READMEs[0]), substr, v)
	want := reflect.ValueOf(v).Elem().Interface()
	for _, readme := range READMEs[1:] {
		other := reflect.New(reflect.TypeOf(v).Elem())
		LoadYAML(tb, filepath.Join(root, readme), substr, other.Interface())
		if got := other.Elem().Interface(); !reflect.DeepEqual(got, want) {
			tb.Fatalf("the yaml block with %q loads differently from %s and %s:\n%+v\n%+v",
				substr, readme, READMEs[0], got, want)
		}
	}
}
