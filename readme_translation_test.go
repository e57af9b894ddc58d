package zerolock_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/zerolock/zerolock/internal/testing/readmetest"
)

// readmeOnlyIn lists the blocks that one README shows and the other does
// not show yet, each found by text it contains. A listed block must be in
// its README and in no other: once both show it, the entry fails the test,
// to be dropped.
var readmeOnlyIn = []struct {
	readme   string
	contains string // text of the block, as written
	why      string
}{}

// readmeLinkLines is how near its top a README links the other: under
// its title.
const readmeLinkLines = 3

// TestReadmesShowTheSameCode holds the READMEs (readmetest.READMEs) to
// one set of fenced blocks: README-cn.md translates README.md's prose,
// never what a reader runs, loads or compiles. Each block is compared by
// its language and its code lines, so that what may be translated does
// not count: comment lines and trailing comments in ```yaml and ```go
// (Go compared as tokens, as TestReadmeGoBlocks does), and trailing
// comments of ```sh commands. A ```sh block's lines that start with "#"
// are what it prints, and count as written. A block that one README shows
// more often than another fails, named by its README and line, except the
// few readmeOnlyIn lists. The test also checks that each README links the
// other in its first readmeLinkLines lines.
func TestReadmesShowTheSameCode(t *testing.T) {
	shown := make(map[string]map[string][]readmeBlock) // code -> README -> its blocks
	var codes []string                                 // in the order first seen
	for _, readme := range readmetest.READMEs {
		for _, b := range readmeBlocks(t, readme) {
			if shown[b.code] == nil {
				shown[b.code] = make(map[string][]readmeBlock)
				codes = append(codes, b.code)
			}
			shown[b.code][readme] = append(shown[b.code][readme], b)
		}
	}

	exempt := make([]int, len(readmeOnlyIn)) // blocks each entry excused
	for _, code := range codes {
		for _, readme := range readmetest.READMEs {
			for _, other := range readmetest.READMEs {
				mine, theirs := shown[code][readme], shown[code][other]
				if other == readme || len(mine) <= len(theirs) {
					continue
				}
				for _, b := range mine[len(theirs):] {
					if i := onlyIn(readme, b); i >= 0 {
						exempt[i]++
						continue
					}
					t.Errorf("%s:%d: a ```%s block that %s shows %d time(s) and %s %d: its code lines are\n%s",
						readme, b.line, b.lang, readme, len(mine), other, len(theirs), code)
				}
			}
		}
	}
	for i, e := range readmeOnlyIn {
		if exempt[i] == 0 {
			t.Errorf("readmeOnlyIn lists a block of %s with %q, which is not only there: drop the entry (%s)", e.readme, e.contains, e.why)
		}
	}

	for i, readme := range readmetest.READMEs {
		other := readmetest.READMEs[(i+1)%len(readmetest.READMEs)]
		text, err := os.ReadFile(readme)
		if err != nil {
			t.Fatal(err)
		}
		top := strings.SplitN(string(text), "\n", readmeLinkLines+1)
		top = top[:min(len(top), readmeLinkLines)]
		if !strings.Contains(strings.Join(top, "\n"), "]("+other+")") {
			t.Errorf("%s: its first %d lines do not link %s", readme, readmeLinkLines, other)
		}
	}
}

// onlyIn returns the index of the readmeOnlyIn entry that excuses b, a
// block of readme, or -1.
func onlyIn(readme string, b readmeBlock) int {
	for i, e := range readmeOnlyIn {
		if e.readme == readme && strings.Contains(b.text, e.contains) {
			return i
		}
	}
	return -1
}

// A readmeBlock is a fenced block of a README.
type readmeBlock struct {
	line int    // 1-based line number of its opening fence
	lang string // what follows the opening fence: go, sh, yaml or nothing
	text string // its lines, as written
	code string // lang and the lines that count, see codeLine
}

// readmeBlocks returns the fenced blocks of the README at path.
func readmeBlocks(t *testing.T, path string) []readmeBlock {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		blocks []readmeBlock
		cur    *readmeBlock
		lines  []string
		code   []string
	)
	for i, line := range strings.Split(string(text), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur, lines, code = &readmeBlock{line: i + 1, lang: strings.TrimPrefix(trimmed, "```")}, nil, nil
		case cur != nil && trimmed == "```":
			cur.text = strings.Join(lines, "\n")
			cur.code = "```" + cur.lang + "\n" + strings.Join(code, "\n")
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			lines = append(lines, line)
			c, err := codeLine(cur.lang, line)
			if err != nil {
				t.Errorf("%s:%d: %v", path, i+1, err)
			}
			if c != "" {
				code = append(code, c)
			}
		}
	}
	if cur != nil {
		t.Errorf("%s:%d: the block is not closed", path, cur.line)
	}
	return blocks
}

// codeLine returns what of line, a line of a block in lang, must be the
// same in every README, or "" for a line that does not count: a Go line's
// tokens; a YAML line less its comment; a shell line less its trailing
// comment, or as written when it starts with "#" (what the block prints);
// any other line less trailing spaces. A YAML comment that is a setting
// commented out (# Mode: window) counts, as the setting. Blank lines do not count.
func codeLine(lang, line string) (string, error) {
	switch lang {
	case "go":
		toks, err := tokenLine(line)
		if err != nil {
			return "", fmt.Errorf("%q does not scan as Go: %w", strings.TrimSpace(line), err)
		}
		return strings.Join(toks, " "), nil
	case "sh":
		if strings.HasPrefix(line, "#") {
			return line, nil
		}
		return strings.TrimRight(uncomment(line), " \t"), nil
	case "yaml":
		code := strings.TrimRight(uncomment(line), " \t")
		if strings.TrimSpace(code) == "" {
			// A commented-out setting (# RejectCode: 409  # prose) is
			// code too: its value must not differ between the READMEs.
			if m := commentedSetting.FindStringSubmatch(line); m != nil {
				return m[1] + "# " + m[2], nil
			}
		}
		return code, nil
	default:
		return strings.TrimRight(line, " \t"), nil
	}
}

// commentedSetting is a YAML line that is a setting commented out: its
// indentation, then "# Key: value" with a value of one word, then
// spaces, the end of the line, or a comment of its own.
var commentedSetting = regexp.MustCompile(`^(\s*)#\s*([A-Z][A-Za-z]*: [^\s#]+)(?:\s*$|\s+#)`)

// uncomment cuts line, a line of shell or YAML, at its comment: a "#" at
// the line's start or after a space or tab, outside quotes ('...', and
// "..." with backslash escapes).
func uncomment(line string) string {
	var quote rune
	escaped := false
	for i, r := range line {
		switch {
		case escaped:
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			}
		case r == '\\':
			escaped = true
		case quote == '"':
			if r == '"' {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i]
		}
	}
	return line
}
