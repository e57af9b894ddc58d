//go:build unix

// Package readmetest runs the shell blocks of README.md in tests, so that
// every command the README shows is run and its shown output checked.
// A block's lines that start with "# " are what it prints, in order.
package readmetest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A Block is a ```sh block of a README.
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
		case cur == nil && line == "```sh":
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

// Run runs script with bash in dir (the test's own directory when empty),
// with env added to the environment and proxies off (nothing may stand
// between a client and a server on loopback). The script runs in a process
// group of its own, which is killed when it has run for timeout, and once
// it has ended, so that no backgrounded command outlives it.
func Run(dir, script string, timeout time.Duration, env ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "NO_PROXY=*", "no_proxy=*"), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err = cmd.Start(); err != nil {
		return "", "", err
	}
	err = cmd.Wait()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v: %w", timeout, err)
	}
	return out.String(), errOut.String(), err
}
