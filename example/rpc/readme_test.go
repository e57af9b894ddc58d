//go:build unix

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zerolock/zerolock/internal/testing/readmetest"
	"github.com/zerolock/zerolock/internal/testing/redistest"
)

const (
	// readmeBuildTimeout bounds building the demo's two commands.
	readmeBuildTimeout = 2 * time.Minute
	// readmeBlockTimeout bounds each README block's run, its backgrounded
	// server included.
	readmeBlockTimeout = time.Minute

	// The commands a README block may run, as written there.
	serverCommand = "go run ./example/rpc"
	clientCommand = "go run ./example/rpc/client"
)

// TestReadmeRPCBlock runs every ```sh block of each README (README.md and
// README-cn.md, readmetest.READMEs) that runs the RPC demo with bash, from
// the repository root, as a reader would, with three changes that keep
// what runs the same: `go run ./example/rpc` and
// `go run ./example/rpc/client` become the two commands built once; the
// server reads etc/rpc.yaml with ListenOn moved to a free port, and the
// client gets that address with -addr; and the server's log goes to a file,
// shown if the block fails, since the "# " lines are what the client
// prints. Each block must print exactly its "# " lines, in order: the
// client prints its answers in one order, the paid call first. The test
// also checks that the server's ListenOn, the client's default -addr and
// the block agree, so the block works unchanged for a reader. Without bash
// or go the test is skipped, or fails when ZEROLOCK_REQUIRE_REDIS=1 (make
// test).
func TestReadmeRPCBlock(t *testing.T) {
	for _, tool := range []string{"bash", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv(redistest.RequireEnv) == "1" {
				t.Fatalf("%s not found and %s=1: %v", tool, redistest.RequireEnv, err)
			}
			t.Skipf("%s not installed", tool)
		}
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := buildDemo(t, root)
	yaml, listenOn := readListenOn(t, filepath.Join(root, "etc", "rpc.yaml"))
	usage, _ := exec.Command(filepath.Join(bin, "client"), "-h").CombinedOutput()
	if !strings.Contains(string(usage), fmt.Sprintf("(default %q)", listenOn)) {
		t.Errorf("the client's default -addr is not etc/rpc.yaml's ListenOn %s:\n%s", listenOn, usage)
	}
	for _, readme := range readmetest.READMEs {
		t.Run(readme, func(t *testing.T) {
			blocks := readmetest.Blocks(t, filepath.Join(root, readme), serverCommand)
			if len(blocks) == 0 {
				t.Fatalf("%s has no ```sh block with %q", readme, serverCommand)
			}
			for _, b := range blocks {
				runRPCBlock(t, readme, b, root, bin, yaml, listenOn)
			}
		})
	}
}

// runRPCBlock runs the block b of readme, from root, with the demo's
// commands built into bin and the server's config, yaml, listening on a
// free port in place of listenOn.
func runRPCBlock(t *testing.T, readme string, b readmetest.Block, root, bin, yaml, listenOn string) {
	t.Helper()
	if len(b.Want) == 0 {
		t.Errorf("%s:%d: the block shows no output (no line starts with \"# \")", readme, b.Line)
		return
	}
	if !strings.Contains(b.Script, listenOn) {
		t.Errorf("%s:%d: the block does not say the server listens on %s", readme, b.Line, listenOn)
	}
	addr := freeAddr(t)
	dir := t.TempDir()
	config, serverLog := filepath.Join(dir, "rpc.yaml"), filepath.Join(dir, "server.log")
	moved := listenOnLine.ReplaceAllLiteralString(yaml, "ListenOn: "+addr)
	if err := os.WriteFile(config, []byte(moved), 0o600); err != nil {
		t.Fatal(err)
	}
	script, err := rewriteRPCBlock(b.Script, map[string]string{
		serverCommand: fmt.Sprintf("%s -f %s >%s 2>&1", quote(filepath.Join(bin, "rpc")), quote(config), quote(serverLog)),
		clientCommand: fmt.Sprintf("%s -addr %s", quote(filepath.Join(bin, "client")), addr),
	})
	if err != nil {
		t.Errorf("%s:%d: %v", readme, b.Line, err)
		return
	}

	stdout, stderr, err := readmetest.Run(root, script, readmeBlockTimeout, "ZEROLOCK_REDIS_HOST=")
	got := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if err != nil || strings.Join(got, "\n") != strings.Join(b.Want, "\n") {
		log, _ := os.ReadFile(serverLog)
		t.Errorf("%s:%d: the block printed\n%s\nwant (its \"# \" lines)\n%s\nerror: %v\nstderr: %s\nserver log:\n%s",
			readme, b.Line, stdout, strings.Join(b.Want, "\n"), err, stderr, log)
	}
	checkStopped(t, addr)
}

// buildDemo builds the server and the client into a temporary directory,
// once, rather than have each `go run` of the block compile them.
func buildDemo(t *testing.T, root string) (bin string) {
	t.Helper()
	bin = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), readmeBuildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin+string(filepath.Separator), "./example/rpc", "./example/rpc/client")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// listenOnLine is the top-level ListenOn line of a YAML config.
var listenOnLine = regexp.MustCompile(`(?m)^ListenOn: *(\S+) *$`)

// readListenOn returns the config file's text and the address its
// ListenOn line names.
func readListenOn(t *testing.T, path string) (text, listenOn string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := listenOnLine.FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s has no top-level ListenOn line", path)
	}
	return string(b), string(m[1])
}

// rewriteRPCBlock replaces, at the start of each line of script, the
// commands that are keys of commands by their values. A line that runs
// `go run` otherwise is an error: the test could not run it as written
// without compiling it again.
func rewriteRPCBlock(script string, commands map[string]string) (string, error) {
	lines := strings.Split(script, "\n")
	for i, line := range lines {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		replaced := false
		for command, with := range commands {
			n := len(strings.Fields(command))
			if len(fields) >= n && strings.Join(fields[:n], " ") == command {
				rest := strings.TrimPrefix(strings.TrimLeft(line, " \t"), command)
				lines[i] = with + rest
				replaced = true
				break
			}
		}
		if !replaced && strings.Contains(line, "go run") {
			return "", fmt.Errorf("the block runs %q, which the test does not know how to run", line)
		}
	}
	return strings.Join(lines, "\n"), nil
}

// quote quotes s for bash.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// checkStopped fails the test if the block's server still accepts
// connections on addr a few seconds after the block ended: a process
// outlived it.
func checkStopped(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Errorf("the server on %s outlived its README block", addr)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
