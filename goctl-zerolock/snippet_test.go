package main

import (
	"fmt"
	"strings"
	"testing"
)

// applySnippet writes snippet, a stretch of a file as the README shows
// it, into file, the file as goctl wrote it. The snippet's lines that are
// also lines of file, paired in order by a longest common subsequence,
// place it: the stretch of file from the first paired line to the last
// is replaced by the whole snippet. A snippet therefore starts and ends
// at lines goctl wrote, or its new first and last lines go just before
// and after the nearest paired ones. It fails when no line pairs.
func applySnippet(file, snippet string) (string, error) {
	lines, snip := splitLines(file), splitLines(snippet)
	pairs := commonLines(lines, snip)
	if len(pairs) == 0 {
		return "", fmt.Errorf("no line of the snippet is a line of the file:\n%s", snippet)
	}
	first, last := pairs[0][0], pairs[len(pairs)-1][0]
	out := append(append(append([]string(nil), lines[:first]...), snip...), lines[last+1:]...)
	return strings.Join(out, "\n") + "\n", nil
}

// changedLines is how many lines of changed are not lines of orig, paired
// in order: the lines a line diff shows as added, a modified line counted
// as an added one (its old text is a removed line, not counted).
func changedLines(orig, changed string) int {
	b := splitLines(changed)
	return len(b) - len(commonLines(splitLines(orig), b))
}

// splitLines returns the lines of s, less their newlines.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// commonLines returns a longest common subsequence of a and b as pairs of
// indexes (in a, in b), in order.
func commonLines(a, b []string) [][2]int {
	// n[i][j] is the length of a longest common subsequence of a[i:], b[j:].
	n := make([][]int, len(a)+1)
	for i := range n {
		n[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				n[i][j] = n[i+1][j+1] + 1
			} else {
				n[i][j] = max(n[i+1][j], n[i][j+1])
			}
		}
	}
	var pairs [][2]int
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			pairs = append(pairs, [2]int{i, j})
			i, j = i+1, j+1
		case n[i+1][j] >= n[i][j+1]:
			i++
		default:
			j++
		}
	}
	return pairs
}

func TestApplySnippet(t *testing.T) {
	const file = "package main\n\nfunc main() {\n\ta()\n\tb()\n}\n"
	for _, tc := range []struct {
		name, snippet, want string
		changed             int
	}{
		{"insert between", "\ta()\n\tx()\n\tb()\n", "package main\n\nfunc main() {\n\ta()\n\tx()\n\tb()\n}\n", 1},
		{"append after the last paired line", "\tb()\n\ty()\n", "package main\n\nfunc main() {\n\ta()\n\tb()\n\ty()\n}\n", 1},
		{"insert before the first paired line", "\tw()\n\ta()\n", "package main\n\nfunc main() {\n\tw()\n\ta()\n\tb()\n}\n", 1},
		{"replace a line", "func main() {\n\tz()\n\tb()\n", "package main\n\nfunc main() {\n\tz()\n\tb()\n}\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := applySnippet(file, tc.snippet)
			if err != nil || got != tc.want {
				t.Fatalf("applySnippet = %q, %v\nwant %q", got, err, tc.want)
			}
			if n := changedLines(file, got); n != tc.changed {
				t.Errorf("changedLines = %d, want %d", n, tc.changed)
			}
		})
	}
	if _, err := applySnippet(file, "\tunrelated()\n"); err == nil {
		t.Error("a snippet with no line of the file applied")
	}
}
