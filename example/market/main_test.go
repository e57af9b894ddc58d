package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/zerolock/zerolock/internal/testing/redistest"
)

func TestMain(m *testing.M) {
	redistest.Quiet()
	redistest.Main(m)
}

// TestCommand runs the command as go run does, on the embedded miniredis
// and on a real redis-server, in both modes.
func TestCommand(t *testing.T) {
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name string
		args []string
		want string // a line the report must hold
	}{
		{"embedded optimistic", []string{"-mode", "optimistic"}, "retries:"},
		{"embedded pessimistic", []string{"-mode", "pessimistic", "-grain", "market"}, "waits:"},
		{"redis optimistic", []string{"-mode", "optimistic", "-addr", srv.Addr(), "-items", "1"}, "on redis at " + srv.Addr()},
		{"redis pessimistic", []string{"-mode", "pessimistic", "-addr", srv.Addr(), "-items", "1"}, "locks expired while held: 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := append([]string{"-buyers", "4", "-sellers", "2", "-duration", "200ms"}, tc.args...)
			if code := run(context.Background(), args, &out, &errOut); code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out.String(), errOut.String())
			}
			for _, want := range []string{tc.want, "invariants: ok", "trades/s"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("report without %q:\n%s", want, out.String())
				}
			}
		})
	}
}

func TestCommandRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-mode", "hopeful"},
		{"-grain", "shelf"},
		{"-buyers", "x"},
		{"stray"},
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != 2 || errOut.Len() == 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message", args, code, errOut.String())
		}
	}
}

func TestCommandInvalidWorkloadFails(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"-items", "0", "-duration", "10ms"}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), "at least one") {
		t.Fatalf("exit %d, stderr %q; want 1 and the reason", code, errOut.String())
	}
}
