package main

import (
	"errors"
	"fmt"
	"strings"
)

// The lines that enclose the generated rules in a service's YAML.
const (
	beginMarker = "# goctl-zerolock: begin"
	endMarker   = "# goctl-zerolock: end"
)

// errMarkers is wrapped by findMarkers's errors.
var errMarkers = errors.New("goctl-zerolock: bad marker lines")

// marked is a YAML file split around its generated block.
type marked struct {
	lines  []string // the file's lines, each with its line break
	begin  int      // index of the begin marker's line
	end    int      // index of the end marker's line
	indent string   // the markers' indentation, the entries'
}

// findMarkers finds the one pair of marker lines in a YAML text. The
// markers must be equally indented and sit in a Rules: sequence (under
// the line Rules:, or among its entries), where the entries go.
func findMarkers(text string) (marked, error) {
	m := marked{lines: strings.SplitAfter(text, "\n"), begin: -1, end: -1}
	for i, line := range m.lines {
		switch strings.TrimSpace(line) {
		case beginMarker:
			if m.begin >= 0 {
				return marked{}, fmt.Errorf("%w: line %d: a second %q (the first is on line %d)", errMarkers, i+1, beginMarker, m.begin+1)
			}
			m.begin = i
		case endMarker:
			if m.end >= 0 {
				return marked{}, fmt.Errorf("%w: line %d: a second %q (the first is on line %d)", errMarkers, i+1, endMarker, m.end+1)
			}
			m.end = i
		}
	}
	switch {
	case m.begin < 0:
		return marked{}, fmt.Errorf("%w: no %q line: put the lines\n    %s\n    %s\nin the Rules: of the Lock: section, "+
			"indented as its entries, for the generated rules to go between them", errMarkers, beginMarker, beginMarker, endMarker)
	case m.end < 0:
		return marked{}, fmt.Errorf("%w: line %d: %q has no %q after it", errMarkers, m.begin+1, beginMarker, endMarker)
	case m.end < m.begin:
		return marked{}, fmt.Errorf("%w: line %d: %q comes before %q (line %d)", errMarkers, m.end+1, endMarker, beginMarker, m.begin+1)
	}
	m.indent = indentOf(m.lines[m.begin])
	if strings.Contains(m.indent, "\t") {
		return marked{}, fmt.Errorf("%w: line %d: YAML indents with spaces, not tabs", errMarkers, m.begin+1)
	}
	if indentOf(m.lines[m.end]) != m.indent {
		return marked{}, fmt.Errorf("%w: line %d: %q is indented unlike %q (line %d)", errMarkers, m.end+1, endMarker, beginMarker, m.begin+1)
	}
	if err := m.checkParent(); err != nil {
		return marked{}, err
	}
	return m, nil
}

// checkParent checks that the markers sit in the sequence of a Rules: key:
// above them, past the deeper lines and the sequence's other entries, the
// first line of content is Rules:.
func (m marked) checkParent() error {
	depth := len(m.indent)
	for i := m.begin - 1; i >= 0; i-- {
		content := strings.TrimSpace(m.lines[i])
		if content == "" || strings.HasPrefix(content, "#") {
			continue
		}
		d := len(indentOf(m.lines[i]))
		if d > depth || d == depth && strings.HasPrefix(content, "-") {
			continue
		}
		key, _, _ := strings.Cut(content, " #")
		if strings.TrimSpace(key) == "Rules:" {
			return nil
		}
		break
	}
	return fmt.Errorf("%w: line %d: the markers must be in the Rules: of the Lock: section, indented as its entries",
		errMarkers, m.begin+1)
}

// block returns the lines between the markers.
func (m marked) block() string {
	return strings.Join(m.lines[m.begin+1:m.end], "")
}

// with returns the text with block in place of the lines between the
// markers, its lines ended as the begin marker's line is (a CRLF file
// stays CRLF).
func (m marked) with(block string) string {
	if strings.HasSuffix(m.lines[m.begin], "\r\n") {
		block = strings.ReplaceAll(strings.ReplaceAll(block, "\r\n", "\n"), "\n", "\r\n")
	}
	return strings.Join(m.lines[:m.begin+1], "") + block + strings.Join(m.lines[m.end:], "")
}

// firstDifference returns the 1-based number of the first line where have
// and want differ, and those lines ("" past the end of either); 0 when
// they are equal.
func firstDifference(have, want string) (int, string, string) {
	if have == want {
		return 0, "", ""
	}
	h, w := strings.SplitAfter(have, "\n"), strings.SplitAfter(want, "\n")
	for i := 0; ; i++ {
		var hl, wl string
		if i < len(h) {
			hl = h[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if hl != wl {
			th, tw := strings.TrimRight(hl, "\r\n"), strings.TrimRight(wl, "\r\n")
			if th == tw { // they differ in their line ending alone: show it
				th, tw = fmt.Sprintf("%q", hl), fmt.Sprintf("%q", wl)
			}
			return i + 1, th, tw
		}
	}
}

func indentOf(line string) string {
	return line[:len(line)-len(strings.TrimLeft(line, " \t"))]
}
