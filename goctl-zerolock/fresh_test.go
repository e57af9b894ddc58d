//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"go/format"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/testproc"
)

// A freshEdit is a change the README's "From goctl" makes to a file of a
// project goctl api new demo generates: the snippet, a file of
// testdata/fresh that the READMEs show verbatim, written in with
// applySnippet.
type freshEdit struct {
	file    string // in the project, slash-separated
	snippet string // in testdata/fresh
	lang    string // of the README block that shows it: api, go or yaml
}

// A freshWay is one way the README wires a fresh goctl project.
type freshWay struct {
	row string // text of the first cell of its row in the READMEs' table of line counts
	// generate is text of the README's ```sh block that the way runs after
	// its .api edits, or "" for none.
	generate string
	edits    []freshEdit // in the README's order, the .api's first
}

// The changes both ways make: the rule on goctl's route, the config's
// fields, and the YAML's Redis and Lock sections.
var (
	routeRuleEdit = freshEdit{"demo.api", "route.api.snippet", "api"}
	configEdit    = freshEdit{"internal/config/config.go", "config.go.snippet", "go"}
	yamlEdit      = freshEdit{"etc/demo-api.yaml", "demo-api.yaml.snippet", "yaml"}
)

// freshWays are the README's two ways: the middleware in main, for every
// route (server.Use), and goctl's route group middleware (middleware: Lock
// in an @server block), whose ServiceContext field zerolock's fills.
var freshWays = []freshWay{
	{row: "`server.Use`", edits: []freshEdit{
		routeRuleEdit,
		configEdit,
		{"demo.go", "main-imports.go.snippet", "go"},
		{"demo.go", "main-use.go.snippet", "go"},
		yamlEdit,
	}},
	{row: "`middleware: Lock`", generate: "goctl api go -api demo.api", edits: []freshEdit{
		routeRuleEdit,
		{"demo.api", "group.api.snippet", "api"},
		configEdit,
		{"internal/svc/servicecontext.go", "servicecontext.go.snippet", "go"},
		{"demo.go", "main-group.go.snippet", "go"},
		yamlEdit,
	}},
}

// The double clicks sent to each fresh service, and the route they click:
// the one goctl api new generates, get /from/:name, whose name goctl's
// .api limits to you or me.
const (
	freshPairs = 11
	freshPath  = "/from/you"
	// freshRules is the snippet of testdata/fresh that the plugin's rule
	// makes of the YAML's Lock section, as the READMEs show it.
	freshRules = "rules.yaml.snippet"
	// freshRefusal is window mode's refusal, with the default Expire.
	freshRefusal = `{"code":"duplicate_request","message":"the same request was already made; repeats are refused for 5s, retry later"}`
)

// TestFreshGoctlProject is issue 28's new user, each way the README's
// "From goctl" wires a project: with the goctl that go.mod pins, it runs
// the README's commands that create the project (goctl api new demo),
// writes in the README's snippets (testdata/fresh, which both READMEs
// must show verbatim), runs goctl api go where the way does, then the
// README's commands that fill the rules (the plugin), tidy and start the
// service (go run .), and sends it 11 double clicks, the second 100-300 ms
// after the first, each pair from a client address of its own (the rule's
// ip key: 127.0.0.2, 127.0.0.3, ...). Every first click must get the
// handler's answer (goctl's stub: 200, null) and every second the
// middleware's refusal (409, window mode's JSON), which the handler never
// sees: the handler runs once per pair.
//
// It also counts the lines each way changes, per file: the lines of a
// line diff from the file goctl wrote to the file the snippets make that
// are added or modified (the plugin's rules and goctl's regenerated files
// are written by tools, not counted), and holds the READMEs' table to
// them.
//
// Three things stand in for what a user's machine has: the project's
// go.mod requires zerolock at this repository (a replace) before go mod
// tidy, as go get would add the published module; the YAML's Redis Host,
// a literal 127.0.0.1:6379, is a redis-server the test starts; its Port,
// 8888, a free port.
func TestFreshGoctlProject(t *testing.T) {
	create := readmeScript(t, "goctl api new demo")
	finish := readmeScript(t, `goctl-zerolock="-yaml etc/demo-api.yaml"`)
	finishLines := splitLines(finish)
	serve := finishLines[len(finishLines)-1]
	if !strings.HasPrefix(serve, "go run ") {
		t.Fatalf("the READMEs' block that starts the fresh service ends with %q, not go run", serve)
	}
	counts := readmeLineCounts(t, freshWays[0].row, freshWays[1].row)
	// The refusal the READMEs quote is the one the service answers.
	for _, readme := range []string{"README.md", "README-cn.md"} {
		text, err := os.ReadFile(filepath.Join(repoRoot(t), readme))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(text), freshRefusal) {
			t.Errorf("%s does not quote the fresh service's refusal %s", readme, freshRefusal)
		}
	}
	for _, way := range freshWays {
		for _, e := range way.edits {
			checkReadmesShow(t, e.lang, readSnippet(t, e.snippet))
		}
	}
	rules := readSnippet(t, freshRules)
	checkReadmesShow(t, "yaml", rules)

	for _, way := range freshWays {
		t.Run(strings.Trim(way.row, "`"), func(t *testing.T) {
			env := commandEnv(t)
			p := newFreshProject(t, create, env)
			generated := p.apply(way, env)
			checkLineCounts(t, p, generated, counts[way.row])

			srv := redistest.Start(t)
			port, err := testproc.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			yaml := p.read(yamlEdit.file)
			for from, to := range map[string]string{"Host: 127.0.0.1:6379": "Host: " + srv.Addr(), "Port: 8888": "Port: " + strconv.Itoa(port)} {
				if strings.Count(yaml, from) != 1 {
					t.Fatalf("%s has %q %d times, want once:\n%s", yamlEdit.file, from, strings.Count(yaml, from), yaml)
				}
				yaml = strings.Replace(yaml, from, to, 1)
			}
			p.write(yamlEdit.file, yaml)
			p.requireZerolock(env)

			start := time.Now()
			out := runScript(t, p.dir, strings.Join(finishLines[:len(finishLines)-1], "\n")+"\n", env)
			if !strings.Contains(out, "etc/demo-api.yaml: wrote 1 rule from demo.api") {
				t.Fatalf("the plugin did not write the rule:\n%s", out)
			}
			// The note on a route whose group names no middleware shows
			// through goctl, on the server.Use way only.
			if noted := strings.Contains(out, "goctl-zerolock: note:"); noted != (way.generate == "") {
				t.Fatalf("the plugin's note shown %v on the %s way, want it on the server.Use way only:\n%s", noted, way.row, out)
			}
			if yaml := p.read(yamlEdit.file); !strings.Contains("\n"+yaml, "\n"+rules) {
				t.Fatalf("%s, the plugin's rule written, does not hold %s:\n%s", yamlEdit.file, freshRules, yaml)
			}
			t.Logf("the plugin and go mod tidy: %v", time.Since(start).Round(time.Millisecond))
			start = time.Now()
			base := startFresh(t, p.dir, serve, env, port)
			t.Logf("%s, from the command to the service listening: %v", serve, time.Since(start).Round(time.Millisecond))
			doubleClicks(t, base)
		})
	}
}

// A freshProject is a project the README's goctl api new block made.
type freshProject struct {
	t   *testing.T
	dir string
}

// newFreshProject runs create, the README's block that makes the project
// and cds into it, in a folder of the test's own. Where the block's cd
// leaves bash is the project.
func newFreshProject(t *testing.T, create string, env []string) *freshProject {
	t.Helper()
	dir := t.TempDir()
	where := filepath.Join(dir, "project-dir")
	runScript(t, dir, create+"pwd >'"+where+"'\n", env)
	project, err := os.ReadFile(where)
	if err != nil {
		t.Fatal(err)
	}
	return &freshProject{t: t, dir: strings.TrimSuffix(string(project), "\n")}
}

// read returns a file of the project, named by its slash-separated path.
func (p *freshProject) read(file string) string {
	p.t.Helper()
	text, err := os.ReadFile(filepath.Join(p.dir, filepath.FromSlash(file)))
	if err != nil {
		p.t.Fatal(err)
	}
	return string(text)
}

// write replaces a file of the project.
func (p *freshProject) write(file, text string) {
	p.t.Helper()
	if err := os.WriteFile(filepath.Join(p.dir, filepath.FromSlash(file)), []byte(text), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// A generatedFile is a file a way edits, as goctl api new wrote it.
type generatedFile struct {
	name, text string
}

// apply makes way's edits, in order, running the README's goctl api go
// block after the .api's when the way has one. It returns the files the
// way edits, in that order, as goctl api new wrote them.
func (p *freshProject) apply(way freshWay, env []string) []generatedFile {
	p.t.Helper()
	var generated []generatedFile
	for _, e := range way.edits {
		if !slices.ContainsFunc(generated, func(g generatedFile) bool { return g.name == e.file }) {
			generated = append(generated, generatedFile{e.file, p.read(e.file)})
		}
	}
	generate := way.generate
	for _, e := range way.edits {
		if generate != "" && !strings.HasSuffix(e.file, ".api") {
			checkGenerate(p.t, p.dir, readmeScript(p.t, generate), env)
			generate = ""
		}
		changed, err := applySnippet(p.read(e.file), readSnippet(p.t, e.snippet))
		if err != nil {
			p.t.Fatalf("%s into %s: %v", e.snippet, e.file, err)
		}
		p.write(e.file, changed)
	}
	return generated
}

// requireZerolock makes the project's go.mod require zerolock from this
// repository, as go get would require the published module: goctl's
// go.mod requires nothing, and go mod tidy then takes go-zero's version
// from zerolock's go.mod.
func (p *freshProject) requireZerolock(env []string) {
	p.t.Helper()
	runScript(p.t, p.dir, fmt.Sprintf("go mod edit -require=github.com/zerolock/zerolock@v0.0.0 -replace=github.com/zerolock/zerolock=%q\n",
		repoRoot(p.t)), env)
}

// checkLineCounts counts the lines of the generated files that p's edits
// changed, per file and in all, checks that the edited Go files are
// gofmt's, and holds the counts to want, a row of the READMEs' table (its
// total under "").
func checkLineCounts(t *testing.T, p *freshProject, generated []generatedFile, want map[string]int) {
	t.Helper()
	total := 0
	for _, g := range generated {
		changed := p.read(g.name)
		if strings.HasSuffix(g.name, ".go") {
			if formatted, err := format.Source([]byte(changed)); err != nil || string(formatted) != changed {
				t.Errorf("%s, as the snippets make it, is not gofmt's (%v):\n%s", g.name, err, changed)
			}
		}
		n := changedLines(g.text, changed)
		total += n
		t.Logf("%s: %d changed lines", g.name, n)
		if n != want[g.name] {
			t.Errorf("%s: %d lines changed, the READMEs' table says %d", g.name, n, want[g.name])
		}
	}
	for file, n := range want {
		edited := slices.ContainsFunc(generated, func(g generatedFile) bool { return g.name == file })
		if file != "" && !edited && n != 0 {
			t.Errorf("%s: the READMEs' table counts %d changed lines, the way changes none", file, n)
		}
	}
	t.Logf("%d changed lines in all", total)
	if total != want[""] {
		t.Errorf("%d lines changed in all, the READMEs' table says %d", total, want[""])
	}
}

// readSnippet returns the text of a file of testdata/fresh.
func readSnippet(t *testing.T, name string) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", "fresh", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

// checkGenerate runs the README's goctl api go block in project, which
// must say that it left the existing ServiceContext alone (the README's
// point: goctl adds no Lock field to it) and have put the group's
// middleware on the route.
func checkGenerate(t *testing.T, project, script string, env []string) {
	t.Helper()
	out := runScript(t, project, script, env)
	if !strings.Contains(out, "internal/svc/servicecontext.go exists, ignored generation") {
		t.Errorf("%s did not leave the ServiceContext alone:\n%s", script, out)
	}
	routes, err := os.ReadFile(filepath.Join(project, "internal", "handler", "routes.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(routes, []byte("[]rest.Middleware{serverCtx.Lock}")) {
		t.Fatalf("%s did not put serverCtx.Lock on the route:\n%s", script, routes)
	}
}

// startFresh runs command, the README's go run, in project as a process
// group of its own, which the test's end kills, and returns the service's
// address once it accepts connections on port.
func startFresh(t *testing.T, project, command string, env []string, port int) string {
	t.Helper()
	var log testproc.SyncBuffer
	cmd := exec.Command("bash", "-c", command)
	cmd.Dir = project
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(readmeCommandTimeout)
	for {
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			return "http://" + addr
		}
		select {
		case <-exited:
			t.Fatalf("%s ended before the service listened:\n%s", command, log.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: nothing listens on %s after %v:\n%s", command, addr, readmeCommandTimeout, log.String())
		}
	}
}

// doubleClicks sends freshPairs double clicks to base's freshPath, each
// pair from a loopback address of its own, the second click 100-300 ms
// after the first, and fails the test unless every first click got the
// handler's answer and every second the refusal.
func doubleClicks(t *testing.T, base string) {
	t.Helper()
	var handled, refused int
	for i := range freshPairs {
		client := clientFrom(t, fmt.Sprintf("127.0.0.%d", 2+i))
		var (
			wg    sync.WaitGroup
			first clickResult
		)
		wg.Add(1)
		go func() {
			defer wg.Done()
			first = click(client, base+freshPath)
		}()
		time.Sleep(time.Duration(100+20*i) * time.Millisecond) // the clicks' spacing, not synchronisation
		second := click(client, base+freshPath)
		wg.Wait()
		if first == (clickResult{status: http.StatusOK, body: "null"}) {
			handled++
		} else {
			t.Errorf("pair %d: the first click got %+v, want the handler's 200 null", i+1, first)
		}
		if second == (clickResult{status: http.StatusConflict, body: freshRefusal}) {
			refused++
		} else {
			t.Errorf("pair %d: the second click got %+v, want 409 %s", i+1, second, freshRefusal)
		}
	}
	t.Logf("of %d double clicks, the handler answered %d first clicks, and %d second clicks got 409", freshPairs, handled, refused)
}

// A clickResult is what a click got: status and body, or the error.
type clickResult struct {
	status int
	body   string
	err    string
}

// click sends a GET to url.
func click(client *http.Client, url string) clickResult {
	resp, err := client.Get(url)
	if err != nil {
		return clickResult{err: err.Error()}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return clickResult{status: resp.StatusCode, err: err.Error()}
	}
	return clickResult{status: resp.StatusCode, body: strings.TrimSpace(string(body))}
}

// clientFrom returns an HTTP client whose connections come from ip, a
// loopback address, with no proxy, closed when the test ends.
func clientFrom(t *testing.T, ip string) *http.Client {
	t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	transport := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return dialer.DialContext(ctx, network, addr)
	}}
	t.Cleanup(transport.CloseIdleConnections)
	return &http.Client{Transport: transport, Timeout: 10 * time.Second}
}
