//go:build unix

package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zerolock/zerolock/internal/testing/readmetest"
	"github.com/zerolock/zerolock/internal/testing/redistest"
)

// readmeBlockTimeout bounds each README block's run, its backgrounded
// commands included.
const readmeBlockTimeout = time.Minute

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
	blocks := readmetest.Blocks(t, "../../README.md", "curl")
	if len(blocks) == 0 {
		t.Fatal("README.md has no ```sh block with curl")
	}

	t.Setenv("ZEROLOCK_REDIS_HOST", "")
	c := loadConfig(t)
	base, _ := startServer(t, c)
	addr := strings.TrimPrefix(base, "http://")

	for _, b := range blocks {
		if len(b.Want) == 0 {
			t.Errorf("README.md:%d: the block shows no output (no line starts with \"# \")", b.Line)
			continue
		}
		script := strings.ReplaceAll(b.Script, "localhost:8888", addr)
		if strings.Contains(script, ":8888") {
			t.Errorf("README.md:%d: the block sends a request elsewhere than localhost:8888", b.Line)
			continue
		}
		stdout, stderr, err := readmetest.Run("", script, readmeBlockTimeout)
		got := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		if err != nil || strings.Join(got, "\n") != strings.Join(b.Want, "\n") {
			t.Errorf("README.md:%d: the block printed\n%s\nwant (its \"# \" lines)\n%s\nerror: %v\nstderr: %s",
				b.Line, stdout, strings.Join(b.Want, "\n"), err, stderr)
		}
	}
}
