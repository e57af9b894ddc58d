//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zerolock/zerolock/internal/testing/readmetest"
	"github.com/zerolock/zerolock/internal/testing/redistest"
)

// readmeBlockTimeout bounds each README block's run, its backgrounded
// commands included.
const readmeBlockTimeout = time.Minute

// TestReadmeCurlBlocks runs every ```sh block that contains curl of each
// README (README.md and README-cn.md, readmetest.READMEs), in order, with
// bash and the real curl, against the demo as `go run ./example/api`
// starts it (etc/api.yaml, no Redis host: the embedded miniredis), on a
// free port in place of localhost:8888: a demo of its own for each
// README, since the blocks show what a freshly started one prints. Each
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
	t.Setenv("ZEROLOCK_REDIS_HOST", "")
	for _, readme := range readmetest.READMEs {
		t.Run(readme, func(t *testing.T) {
			runCurlBlocks(t, readme)
		})
	}
}

// runCurlBlocks runs the curl blocks of readme, a path from the
// repository root, against a demo of their own.
func runCurlBlocks(t *testing.T, readme string) {
	blocks := readmetest.Blocks(t, filepath.Join("..", "..", readme), "curl")
	if len(blocks) == 0 {
		t.Fatalf("%s has no ```sh block with curl", readme)
	}

	c := loadConfig(t)
	base, _ := startServer(t, c)
	addr := strings.TrimPrefix(base, "http://")

	for _, b := range blocks {
		if len(b.Want) == 0 {
			t.Errorf("%s:%d: the block shows no output (no line starts with \"# \")", readme, b.Line)
			continue
		}
		script := strings.ReplaceAll(b.Script, "localhost:8888", addr)
		if strings.Contains(script, ":8888") {
			t.Errorf("%s:%d: the block sends a request elsewhere than localhost:8888", readme, b.Line)
			continue
		}
		stdout, stderr, err := readmetest.Run("", script, readmeBlockTimeout)
		got := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		if err != nil || strings.Join(got, "\n") != strings.Join(b.Want, "\n") {
			t.Errorf("%s:%d: the block printed\n%s\nwant (its \"# \" lines)\n%s\nerror: %v\nstderr: %s",
				readme, b.Line, stdout, strings.Join(b.Want, "\n"), err, stderr)
		}
	}
}
