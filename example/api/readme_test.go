//go:build unix

package main

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

	"github.com/zerolock/zerolock/internal/redistest"
)

// readmeBlockTimeout bounds each README block's run, its backgrounded
// commands included.
const readmeBlockTimeout = time.Minute

// readmeBlock is a ```sh block of README.md that sends curl requests to
// the demo.
type readmeBlock struct {
	// line is the line number of the opening fence.
	line int
	// script is the block as written.
	script string
	// want is what the block prints: its lines that start with "# ", less
	// that prefix, in order. Each is a body, a space and the HTTP status,
	// as curl's -w ' %{http_code}\n' prints them.
	want []string
}

// readmeCurlBlocks returns README.md's ```sh blocks that contain curl.
func readmeCurlBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	text, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var (
		blocks []readmeBlock
		cur    *readmeBlock
		lines  []string
	)
	for i, line := range strings.Split(string(text), "\n") {
		switch {
		case cur == nil && line == "```sh":
			cur, lines = &readmeBlock{line: i + 1}, nil
		case cur != nil && line == "```":
			cur.script = strings.Join(lines, "\n") + "\n"
			if strings.Contains(cur.script, "curl") {
				blocks = append(blocks, *cur)
			}
			cur = nil
		case cur != nil:
			lines = append(lines, line)
			if want, ok := strings.CutPrefix(line, "# "); ok {
				cur.want = append(cur.want, want)
			}
		}
	}
	return blocks
}

// TestReadmeCurlBlocks runs every ```sh block of README.md that contains
// curl, in order, with bash and the real curl, against the demo as
// `go run ./example/api` starts it (etc/api.yaml, no Redis host: the
// embedded miniredis), on a free port in place of localhost:8888. Each
// block must print exactly its "# " lines, in order: the blocks are
// written so that their output has one order. Without curl or bash the
// test is skipped, or fails when ZEROLOCK_REQUIRE_REDIS=1 (make test).
func TestReadmeCurlBlocks(t *testing.T) {
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv(redistest.RequireEnv) == "1" {
				t.Fatalf("%s not found and %s=1: %v", tool, redistest.RequireEnv, err)
			}
			t.Skipf("%s not installed", tool)
		}
	}
	blocks := readmeCurlBlocks(t)
	if len(blocks) == 0 {
		t.Fatal("README.md has no ```sh block with curl")
	}

	t.Setenv("ZEROLOCK_REDIS_HOST", "")
	c := loadConfig(t)
	startServer(t, c)
	addr := fmt.Sprintf("127.0.0.1:%d", c.Port)

	for _, b := range blocks {
		if len(b.want) == 0 {
			t.Errorf("README.md:%d: the block shows no output (no line starts with \"# \")", b.line)
			continue
		}
		script := strings.ReplaceAll(b.script, "localhost:8888", addr)
		if strings.Contains(script, ":8888") {
			t.Errorf("README.md:%d: the block sends a request elsewhere than localhost:8888", b.line)
			continue
		}
		stdout, stderr, err := runBash(script)
		got := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		if err != nil || strings.Join(got, "\n") != strings.Join(b.want, "\n") {
			t.Errorf("README.md:%d: the block printed\n%s\nwant (its \"# \" lines)\n%s\nerror: %v\nstderr: %s",
				b.line, stdout, strings.Join(b.want, "\n"), err, stderr)
		}
	}
}

// runBash runs script with bash in a process group of its own, which is
// killed when the script has run for readmeBlockTimeout, and once it has
// ended, so that no backgrounded command outlives it.
func runBash(script string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), readmeBlockTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	// A proxy from the environment must not stand between curl and the
	// demo on loopback.
	cmd.Env = append(os.Environ(), "NO_PROXY=*", "no_proxy=*")
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
		err = fmt.Errorf("timed out after %v: %w", readmeBlockTimeout, err)
	}
	return out.String(), errOut.String(), err
}
