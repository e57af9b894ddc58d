//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zerolock/zerolock/internal/testing/readmetest"
)

// readmeCommandTimeout bounds a README command's run: a go build of a
// fresh project with a cold build cache included.
const readmeCommandTimeout = 5 * time.Minute

// readmeScript returns the one ```sh block that contains substr in each
// README (readmetest.READMEs): the same script in every README, since
// README-cn.md translates the prose around a command, never the command.
func readmeScript(t *testing.T, substr string) string {
	t.Helper()
	var script string
	for i, readme := range readmetest.READMEs {
		blocks := readmetest.Blocks(t, filepath.Join(repoRoot(t), readme), substr)
		if len(blocks) != 1 {
			t.Fatalf("%s has %d ```sh blocks with %q, want one", readme, len(blocks), substr)
		}
		if i == 0 {
			script = blocks[0].Script
		} else if blocks[0].Script != script {
			t.Fatalf("%s:%d shows\n%s\nand %s\n%s", readme, blocks[0].Line, blocks[0].Script, readmetest.READMEs[0], script)
		}
	}
	return script
}

// checkReadmesShow fails the test unless snippet is, verbatim and as whole
// lines, part of a ```lang block of every README.
func checkReadmesShow(t *testing.T, lang, snippet string) {
	t.Helper()
	for _, readme := range readmetest.READMEs {
		var shown bool
		for _, b := range readmetest.Fenced(t, filepath.Join(repoRoot(t), readme), lang, "") {
			shown = shown || strings.Contains("\n"+b.Script, "\n"+snippet)
		}
		if !shown {
			t.Errorf("no ```%s block of %s shows, verbatim,\n%s", lang, readme, snippet)
		}
	}
}

// countCell is a number alone in a table cell.
var countCell = regexp.MustCompile(`^\d+$`)

// readmeLineCounts reads the table of each README that counts the lines
// a way of wiring a fresh goctl project changes: a header row whose cells
// name files in backquotes (`demo.go`) and end with the total's column,
// and a row per way, named by text its first cell holds (rowKeys). It
// returns each row's counts by file, the total under "", and fails the
// test unless every README states the same numbers.
func readmeLineCounts(t *testing.T, rowKeys ...string) map[string]map[string]int {
	t.Helper()
	var first map[string]map[string]int
	for _, readme := range readmetest.READMEs {
		text, err := os.ReadFile(filepath.Join(repoRoot(t), readme))
		if err != nil {
			t.Fatal(err)
		}
		counts := make(map[string]map[string]int)
		var files []string // the header's columns after the first; "" for the total
		for _, line := range strings.Split(string(text), "\n") {
			if !strings.HasPrefix(line, "|") {
				files = nil
				continue
			}
			cells := strings.Split(strings.Trim(line, "| "), "|")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			if files == nil && strings.Contains(line, "`demo.api`") {
				files = make([]string, len(cells)-1)
				for i, c := range cells[1 : len(cells)-1] {
					files[i] = strings.Trim(c, "`")
				}
				continue
			}
			for _, key := range rowKeys {
				if files == nil || !strings.Contains(cells[0], key) {
					continue
				}
				if len(cells) != len(files)+1 {
					t.Fatalf("%s: the row %q has %d cells, its header %d", readme, line, len(cells), len(files)+1)
				}
				counts[key] = make(map[string]int)
				for i, c := range cells[1:] {
					if !countCell.MatchString(c) {
						t.Fatalf("%s: the row %q has %q where a count goes", readme, line, c)
					}
					counts[key][files[i]], _ = strconv.Atoi(c)
				}
			}
		}
		for _, key := range rowKeys {
			if counts[key] == nil {
				t.Fatalf("%s has no row with %q under a header naming `demo.api`", readme, key)
			}
		}
		if first == nil {
			first = counts
			continue
		}
		for _, key := range rowKeys {
			for file, n := range counts[key] {
				if first[key][file] != n {
					column := file
					if column == "" {
						column = "the total"
					}
					t.Errorf("%s counts %d in the row %s for %s, %s %d", readme, n, key, column, readmetest.READMEs[0], first[key][file])
				}
			}
		}
	}
	return first
}

// goEnv is what go env says of where go keeps its settings and caches:
// a README command that runs go with HOME set to a folder of the test's
// own (goctl's settings) still finds them.
var goEnv = sync.OnceValues(func() ([]string, error) {
	vars := []string{"GOENV", "GOPATH", "GOMODCACHE", "GOCACHE"}
	out, err := exec.Command("go", append([]string{"env"}, vars...)...).Output()
	if err != nil {
		return nil, err
	}
	values := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	env := make([]string, len(vars))
	for i, v := range vars {
		env[i] = v + "=" + values[i]
	}
	return env, nil
})

// commandEnv is the environment README commands run in: goctl and the
// plugin (as binaries builds them) first on PATH, as go install leaves
// them; HOME a folder of the test's own, as runGoctl sets it; go's
// settings and caches where they are.
func commandEnv(t *testing.T) []string {
	t.Helper()
	goctl, _ := binaries(t)
	env, err := goEnv()
	if err != nil {
		t.Fatal(err)
	}
	return append(env,
		"PATH="+filepath.Dir(goctl)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+t.TempDir(),
		// readmetest.Run turns proxies off for loopback; go mod tidy may
		// need them to reach the module proxy.
		"NO_PROXY="+os.Getenv("NO_PROXY"), "no_proxy="+os.Getenv("no_proxy"))
}

// runScript runs script with bash in dir, stopping at its first failing
// command, and fails the test unless it succeeds. It returns what it
// printed, stdout and stderr together.
func runScript(t *testing.T, dir, script string, env []string) string {
	t.Helper()
	stdout, stderr, err := readmetest.Run(dir, "set -e\n"+script, readmeCommandTimeout, env...)
	if err != nil {
		t.Fatalf("in %s:\n%s\nfailed: %v\n%s%s", dir, script, err, stdout, stderr)
	}
	return stdout + stderr
}

// TestReadmeInstallsPlugin runs the READMEs' install command, with GOBIN
// a folder of the test's own, and finds the plugin there.
func TestReadmeInstallsPlugin(t *testing.T) {
	script := readmeScript(t, "cd goctl-zerolock && go install")
	gobin := t.TempDir()
	runScript(t, repoRoot(t), script, []string{"GOBIN=" + gobin})
	if _, err := os.Stat(filepath.Join(gobin, "goctl-zerolock")); err != nil {
		t.Fatalf("%s installed no goctl-zerolock in GOBIN: %v", script, err)
	}
}

// demoCommands returns the READMEs' plugin commands for the repository's
// demo: the one that writes etc/api.yaml and the one CI runs (-check), the
// only lines of their block.
func demoCommands(t *testing.T) (write, check string) {
	t.Helper()
	script := readmeScript(t, "-api example/api/demo.api")
	for _, line := range splitLines(script) {
		switch {
		case strings.HasPrefix(line, "goctl api plugin ") && strings.Contains(line, " -check\""):
			check = line
		case strings.HasPrefix(line, "goctl api plugin "):
			write = line
		default:
			t.Fatalf("the READMEs' block of plugin commands for the demo has a line no test runs: %q", line)
		}
	}
	if write == "" || check == "" {
		t.Fatalf("the READMEs' block of plugin commands for the demo lacks the command that writes or the one that checks:\n%s", script)
	}
	return write, check
}

// TestGoctlChecksDemo: the READMEs' CI command, run in the repository
// through the real goctl, finds that etc/api.yaml holds the rules
// example/api/demo.api declares.
func TestGoctlChecksDemo(t *testing.T) {
	_, check := demoCommands(t)
	out := runScript(t, repoRoot(t), check, commandEnv(t))
	if !strings.Contains(out, "etc/api.yaml: 6 rules, as demo.api declares") {
		t.Fatalf("%s printed\n%s", check, out)
	}
}

// TestGoctlWritesDemo: the READMEs' command that writes the demo's rules,
// run through the real goctl in a copy of the repository's etc/api.yaml
// (its marked block emptied) and example/api/demo.api, writes exactly the
// committed etc/api.yaml.
func TestGoctlWritesDemo(t *testing.T) {
	write, _ := demoCommands(t)
	root := repoRoot(t)
	committed, err := os.ReadFile(filepath.Join(root, "etc", "api.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := findMarkers(string(committed))
	if err != nil {
		t.Fatal(err)
	}
	api, err := os.ReadFile(filepath.Join(root, "example", "api", "demo.api"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, text := range map[string]string{"etc/api.yaml": m.with(""), "example/api/demo.api": string(api)} {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := runScript(t, dir, write, commandEnv(t))
	if !strings.Contains(out, "etc/api.yaml: wrote 6 rules from demo.api") {
		t.Fatalf("%s printed\n%s", write, out)
	}
	written, err := os.ReadFile(filepath.Join(dir, "etc", "api.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if line, have, want := firstDifference(string(written), string(committed)); line != 0 {
		t.Fatalf("written line %d is %q, committed %q", line, have, want)
	}
}
