package zerolock_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/zerolock/zerolock"

// listedPackage is what go list -json says of a package that matters here.
type listedPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// libraryPackages lists the packages the library ships (tests, harnesses,
// examples and the torture suite excluded) with their non-test
// dependencies.
func libraryPackages(t *testing.T) []listedPackage {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if isHarness(p.ImportPath) || strings.HasPrefix(p.ImportPath, module+"/example/") ||
			p.ImportPath == module+"/torture" {
			continue
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 8 {
		t.Fatalf("go list found only %d library packages", len(pkgs))
	}
	return pkgs
}

func isHarness(path string) bool {
	return strings.HasPrefix(path, module+"/internal/testing/")
}

// The import directions of docs/ARCHITECTURE.md, checked on what the
// library ships: no package depends on a test harness; the contract
// imports no backend; etcdlock and zklock do not depend on redislock; the
// middleware and the interceptor never import each other; nothing in the
// library imports an example; the shared request flow (internal/guard)
// knows no backend and no transport; the HTTP client (httpclient) knows no
// backend and no server transport. locktest, the conformance suite,
// ships like testing/fstest, so it depends on no harness, backend or
// transport, nor on any module but this one. redislock's plumbing
// (redislock/internal/...) is imported by redislock alone (Go enforces
// it too), and depends on no transport, no guard and no other backend.
func TestImportDirections(t *testing.T) {
	forbidden := map[string][]string{ // package -> what it must not depend on
		module:                     {module + "/redislock", module + "/etcdlock", module + "/zklock", module + "/middleware", module + "/interceptor", module + "/internal/", module + "/observe"},
		module + "/locktest":       {module + "/internal/testing/", module + "/redislock", module + "/etcdlock", module + "/zklock", module + "/middleware", module + "/interceptor", module + "/observe"},
		module + "/observe":        {module + "/redislock", module + "/etcdlock", module + "/zklock", module + "/middleware", module + "/interceptor", module + "/internal/"},
		module + "/etcdlock":       {module + "/redislock", module + "/zklock"},
		module + "/zklock":         {module + "/redislock", module + "/etcdlock"},
		module + "/redislock":      {module + "/etcdlock", module + "/zklock", module + "/middleware", module + "/interceptor", module + "/internal/guard", module + "/internal/keyspec"},
		module + "/internal/guard": {module + "/redislock", module + "/etcdlock", module + "/zklock", module + "/middleware", module + "/interceptor"},
		module + "/middleware":     {module + "/interceptor"},
		module + "/interceptor":    {module + "/middleware"},
		// The HTTP client half knows no backend and no server transport: it
		// reads the served request through internal/guard alone.
		module + "/httpclient": {module + "/redislock", module + "/etcdlock", module + "/zklock", module + "/middleware", module + "/interceptor"},
		// observe's backend-facing side is a leaf like observe.
		module + "/observe/lockobs": {module + "/redislock", module + "/etcdlock", module + "/zklock", module + "/middleware", module + "/interceptor", module + "/internal/", module + "/observe"},
	}
	redislockInternal := module + "/redislock/internal/"
	locktestSeen := false
	for _, p := range libraryPackages(t) {
		locktestSeen = locktestSeen || p.ImportPath == module+"/locktest"
		bad := forbidden[p.ImportPath]
		if strings.HasPrefix(p.ImportPath, redislockInternal) {
			bad = []string{module + "/redislock", module + "/etcdlock", module + "/zklock", module + "/middleware", module + "/interceptor", module + "/internal/guard", module + "/internal/keyspec", module + "/internal/replay"}
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, redislockInternal) && p.ImportPath != module+"/redislock" && !strings.HasPrefix(p.ImportPath, redislockInternal) {
				t.Errorf("%s imports %s, which is redislock's own plumbing", p.ImportPath, imp)
			}
		}
		for _, dep := range p.Deps {
			if p.ImportPath == module+"/locktest" && !isStandard(dep) && dep != module && !strings.HasPrefix(dep, module+"/") {
				t.Errorf("%s depends on %s: a test kit users run pulls in no module but this one", p.ImportPath, dep)
			}
			if isHarness(dep) {
				t.Errorf("%s depends on the test harness %s", p.ImportPath, dep)
			}
			if strings.HasPrefix(dep, module+"/example/") {
				t.Errorf("%s depends on the example %s", p.ImportPath, dep)
			}
			for _, bad := range bad {
				if dep == bad || (strings.HasSuffix(bad, "/") && strings.HasPrefix(dep, bad)) {
					t.Errorf("%s depends on %s", p.ImportPath, dep)
				}
			}
		}
	}
	if !locktestSeen {
		t.Errorf("go list did not list %s among the library's packages", module+"/locktest")
	}
}

// isStandard reports whether path is a standard library package: its
// first element has no dot, as every module path outside it has.
func isStandard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}
