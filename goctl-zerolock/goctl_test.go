package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The binaries the goctl tests run, built once per test binary into a
// folder TestMain removes.
var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binaries builds goctl, at the version go.mod pins (its tool directive),
// and the plugin, in one go build, and returns their paths.
func binaries(t *testing.T) (goctl, plugin string) {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to build goctl with")
	}
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "goctl-zerolock-test-"); buildErr != nil {
			return
		}
		cmd := exec.Command(goCmd, "build", "-o", binDir+string(filepath.Separator),
			"github.com/zeromicro/go-zero/tools/goctl", ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building goctl and the plugin: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "goctl"), filepath.Join(binDir, "goctl-zerolock")
}

// runGoctl runs goctl api plugin with the plugin and its arguments on
// apiFile, -dir dir, and returns its output and whether it succeeded.
// goctl keeps its settings in $HOME/.goctl: HOME is a folder of the
// test's own.
func runGoctl(t *testing.T, args, apiFile, dir string) (string, bool) {
	t.Helper()
	goctl, plugin := binaries(t)
	pluginArg := plugin
	if args != "" {
		pluginArg += "=" + args
	}
	cmd := exec.Command(goctl, "api", "plugin", "-plugin", pluginArg, "-api", apiFile, "-dir", dir)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatal(err)
	}
	return string(out), err == nil
}

// repoRoot is the zerolock repository this module sits in. Its files
// (example/api/demo.api, etc/api.yaml, the READMEs) are outside this
// module, where go test's cache does not look for changes: make test runs
// these tests with -count=1.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestGoctlRefuses: through the real goctl, a typo'd json key, a claim:
// key in a group without jwt: and an unknown property each fail the run
// with a message that names the .api line.
func TestGoctlRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, props, want string
	}{
		{"json typo", `lock: "json:orderID"`,
			fmt.Sprintf(`t.api:%d: POST /h: lock: key json:orderID: the request type Req has no json field "orderID"`, badLine)},
		{"claim without jwt", `lock: "claim:userId"`,
			fmt.Sprintf(`t.api:%d: POST /h: lock: key claim:userId: the route's group has no jwt:`, badLine)},
		{"unknown property", "lock: \"ip\"\n\t\tlockTimeout: \"1s\"",
			fmt.Sprintf(`t.api:%d: POST /h: unknown property lockTimeout`, badLine+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			apiFile := writeAPI(t, fmt.Sprintf(badAPI, tc.props))
			out, ok := runGoctl(t, "", apiFile, filepath.Dir(apiFile))
			if ok || !strings.Contains(out, tc.want) {
				t.Fatalf("goctl api plugin (ok %v):\n%s\nwant a failure naming\n%s", ok, out, tc.want)
			}
		})
	}
}
