package redislock

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock/internal/script"
)

// TestLuaCode: the code go-zero's store sends is every script's source
// without its comments, line for line (a script error names the file's
// line), and still compiles. It fails when a script gains a comment after
// code or a block comment, which script.LuaCode would leave in or break.
func TestLuaCode(t *testing.T) {
	admin := redistest.Start(t).Client(t)
	files, err := filepath.Glob("*.lua")
	scripts := script.All()
	if err != nil || len(scripts) != len(files) {
		t.Fatalf("%d scripts registered, want one per .lua file: %v (%v)", len(scripts), files, err)
	}
	for _, s := range scripts {
		src, code := strings.Split(s.Src, "\n"), strings.Split(s.Code, "\n")
		if len(code) != len(src) {
			t.Fatalf("code has %d lines, source %d:\n%s", len(code), len(src), s.Code)
		}
		for i, line := range code {
			trimmed := strings.TrimLeft(src[i], " \t")
			switch {
			case strings.HasPrefix(trimmed, "--") && line != "":
				t.Errorf("line %d, a comment, was kept: %q", i+1, line)
			case !strings.HasPrefix(trimmed, "--") && line != trimmed:
				t.Errorf("line %d is %q, want the source's %q", i+1, line, trimmed)
			case strings.Contains(line, "--") || strings.Contains(line, "[["):
				t.Errorf("line %d has a comment after code or a long bracket: %q", i+1, line)
			}
		}
		if len(s.Code) >= len(s.Src) {
			t.Errorf("code is %d bytes, no shorter than the source's %d", len(s.Code), len(s.Src))
		}
		if err := admin.ScriptLoad(context.Background(), s.Code).Err(); err != nil {
			t.Errorf("SCRIPT LOAD of the code: %v\n%s", err, s.Code)
		}
	}
}

// TestEvalArgs: the EVAL go-zero's store sends names the code and the
// number of keys as go-redis's own Eval does.
func TestEvalArgs(t *testing.T) {
	keys := []string{"k", "{k}:w"}
	got := releaseScript.EvalArgs(keys, "token", "channel")
	want := []any{"eval", releaseScript.Code, 2, "k", "{k}:w", "token", "channel"}
	if len(got) != len(want) {
		t.Fatalf("evalArgs = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("evalArgs[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}
