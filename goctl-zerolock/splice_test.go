package main

import (
	"errors"
	"strings"
	"testing"
)

const serviceYAML = `Name: shop
# The lock rules.
Lock:
  Expire: 5s
  Rules:
    - Method: GET
      Path: /handwritten
    # goctl-zerolock: begin
    - Method: POST
      Path: /stale
    # goctl-zerolock: end
    - Method: GET
      Path: /after
Other: 1
`

// TestFindMarkersAndReplace: the block between the markers is replaced at
// their indentation, and nothing else changes.
func TestFindMarkersAndReplace(t *testing.T) {
	m, err := findMarkers(serviceYAML)
	if err != nil {
		t.Fatal(err)
	}
	if m.indent != "    " || m.block() != "    - Method: POST\n      Path: /stale\n" {
		t.Fatalf("indent %q, block %q", m.indent, m.block())
	}
	got := m.with(renderRules([]rule{{Method: "POST", Path: "/orders", Keys: []string{"ip"}}}, m.indent))
	want := strings.Replace(serviceYAML, "    - Method: POST\n      Path: /stale\n",
		"    - Method: POST\n      Path: /orders\n      Keys: [ip]\n", 1)
	if got != want {
		t.Fatalf("replaced:\n%s\nwant\n%s", got, want)
	}
	if empty := m.with(""); !strings.Contains(empty, "    # goctl-zerolock: begin\n    # goctl-zerolock: end\n") {
		t.Fatalf("no rules left:\n%s", empty)
	}
}

// TestFindMarkersPlacement: markers directly under Rules:, indented or
// not (YAML's indentless sequence), and with Windows line ends.
func TestFindMarkersPlacement(t *testing.T) {
	for _, text := range []string{
		"Lock:\n  Rules:\n    # goctl-zerolock: begin\n    # goctl-zerolock: end\n",
		"Lock:\n  Rules: # generated\n  # goctl-zerolock: begin\n  # goctl-zerolock: end\n",
		"Lock:\r\n  Rules:\r\n    # goctl-zerolock: begin\r\n    # goctl-zerolock: end\r\n",
		"Lock:\n  Rules:\n\n    # comment\n    # goctl-zerolock: begin\n    # goctl-zerolock: end",
	} {
		if _, err := findMarkers(text); err != nil {
			t.Errorf("%q: %v", text, err)
		}
	}
}

// TestFindMarkersRefuses: each malformed pair of markers is refused,
// naming the line.
func TestFindMarkersRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"none", "Lock:\n  Rules:\n", `no "# goctl-zerolock: begin" line`},
		{"no end", "Lock:\n  Rules:\n    # goctl-zerolock: begin\n", `line 3: "# goctl-zerolock: begin" has no "# goctl-zerolock: end"`},
		{"reversed", "Lock:\n  Rules:\n    # goctl-zerolock: end\n    # goctl-zerolock: begin\n", "line 3: \"# goctl-zerolock: end\" comes before"},
		{"two begins", "Lock:\n  Rules:\n    # goctl-zerolock: begin\n    # goctl-zerolock: begin\n    # goctl-zerolock: end\n", "line 4: a second"},
		{"two ends", "Lock:\n  Rules:\n    # goctl-zerolock: begin\n    # goctl-zerolock: end\n    # goctl-zerolock: end\n", "line 5: a second"},
		{"indents", "Lock:\n  Rules:\n    # goctl-zerolock: begin\n  # goctl-zerolock: end\n", "line 4: \"# goctl-zerolock: end\" is indented unlike"},
		{"tabs", "Lock:\n  Rules:\n\t# goctl-zerolock: begin\n\t# goctl-zerolock: end\n", "line 3: YAML indents with spaces"},
		{"not in rules", "Lock:\n  Expire: 5s\n  # goctl-zerolock: begin\n  # goctl-zerolock: end\n", "line 3: the markers must be in the Rules:"},
		{"top level", "# goctl-zerolock: begin\n# goctl-zerolock: end\n", "line 1: the markers must be in the Rules:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := findMarkers(tc.text)
			if !errors.Is(err, errMarkers) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want errMarkers containing %q", err, tc.want)
			}
		})
	}
}

// TestFirstDifference names the first differing line, past the end of
// the shorter text too.
func TestFirstDifference(t *testing.T) {
	for _, tc := range []struct {
		have, want string
		line       int
		h, w       string
	}{
		{"a\nb\n", "a\nb\n", 0, "", ""},
		{"a\nb\n", "a\nc\n", 2, "b", "c"},
		{"a\n", "a\nb\n", 2, "", "b"},
		{"a\nb\nc\n", "a\n", 2, "b", ""},
	} {
		line, h, w := firstDifference(tc.have, tc.want)
		if line != tc.line || h != tc.h || w != tc.w {
			t.Errorf("firstDifference(%q, %q) = %d, %q, %q; want %d, %q, %q", tc.have, tc.want, line, h, w, tc.line, tc.h, tc.w)
		}
	}
}
