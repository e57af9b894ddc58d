package torture

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zerolock/zerolock/internal/testing/redistest"
)

// childEnv names the role of a re-executed test binary.
const childEnv = "ZEROLOCK_TORTURE_CHILD"

func TestMain(m *testing.M) {
	redistest.Quiet()
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	startReport()
	redistest.Main(m)
}

// long reports whether make torture asked for the long versions.
func long() bool {
	return os.Getenv("ZEROLOCK_TORTURE") == "1"
}

var report = struct {
	sync.Mutex
	path string
}{path: os.Getenv("ZEROLOCK_RELIABILITY_REPORT")}

// startReport writes the report's header, when make torture asked for one.
func startReport() {
	if report.path == "" {
		return
	}
	header := fmt.Sprintf("# Reliability\n\nWritten by `make torture` on %s: %s, %d CPUs, %s,\n"+
		"every server started by the tests on 127.0.0.1. Each row is one test with its\n"+
		"parameters and what it measured. Issue 8's scoping checks (test 9) are unit tests:\n"+
		"TestConcurrentDuplicatesOneReachesHandler in middleware and interceptor (two users with one\n"+
		"order id do not block each other) and TestSharedRuleWarning; its hygiene checks (test 10)\n"+
		"are `make race-repeat`, goleak.VerifyTestMain in every package that starts goroutines, and\n"+
		"redislock's TestTokens (100,000 tokens: length and uniqueness).\n\n"+
		"| test | parameters | figures | result |\n|---|---|---|---|\n",
		time.Now().UTC().Format("2006-01-02"), runtime.Version(), runtime.NumCPU(), redisVersion())
	_ = os.WriteFile(report.path, []byte(header), 0o644)
}

// redisVersion names the redis-server the tests start ("redis-server
// 7.0.15"), from its --version.
func redisVersion() string {
	out, err := exec.Command("redis-server", "--version").Output()
	if err != nil {
		return "redis-server (version unknown: " + err.Error() + ")"
	}
	for _, field := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(field, "v="); ok {
			return "redis-server " + v
		}
	}
	return "redis-server (version unknown)"
}

// record adds a row to the report (when one is being written) and logs it.
func record(t *testing.T, params, figures string) {
	t.Helper()
	result := "pass"
	if t.Failed() {
		result = "FAIL"
	}
	t.Logf("%s: %s; %s", t.Name(), params, figures)
	if report.path == "" {
		return
	}
	report.Lock()
	defer report.Unlock()
	f, err := os.OpenFile(report.path, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Errorf("report: %v", err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "| %s | %s | %s | %s |\n", t.Name(), params, strings.ReplaceAll(figures, "|", "/"), result)
}
