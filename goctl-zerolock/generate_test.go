package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zeromicro/go-zero/tools/goctl/plugin"
)

// shopRules is what testdata/shop.api declares, in its order: the
// imported file's route last, prefixes applied.
const shopRules = `- Method: POST
  Path: /v1/orders/:id
  Keys: [claim:userId, json:orderId, json:items.0.sku]
- Method: POST
  Path: /v1/orders/:id/pay
  Keys: [claim:userId, header:Idempotency-Key]
  Mode: replay
  Retain: 1h
  MaxResponseBytes: 65536
  Fingerprint: [json:orderId, json:inner.code]
  RejectCode: 425
  Message: "请勿重复提交, \"again\": later"
  Wait: 2s
- Method: GET
  Path: /search
  Keys: [ip, query:q, form:page]
  Mode: limit
  Expire: 30s
  Permits: 3
  MaxHold: 5m
- Method: POST
  Path: /admin/rebuild/:id
  Keys: [path:id]
  Mode: window
  DisableRenew: true
  SharedKeys: true
  SkipRouteCheck: true
`

// TestCollectRules: the rules of testdata/shop.api, in the files' order
// (goctl's spec sorts routes by path), routes without lock properties
// left out.
func TestCollectRules(t *testing.T) {
	rules, err := collectRules(parseAPI(t, "testdata/shop.api"), "testdata/shop.api", testShow(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := renderRules(rules, ""); got != shopRules {
		t.Fatalf("rules:\n%s\nwant\n%s", got, shopRules)
	}
}

// badAPI is an .api whose one route's @doc holds the properties given, on
// line badLine onwards.
const badAPI = `syntax = "v1"

type Req {
	OrderId string ` + "`json:\"orderId\"`" + `
}

@server (
	group: open
)
service bad-api {
	@doc (
		%s
	)
	@handler H
	post /h (Req)
}
`

const badLine = 12

// TestCollectRulesRefuses: each problem is reported with the file and
// line of the property it is about, all of them at once, in line order.
func TestCollectRulesRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, props string
		want        []string
	}{
		{"json typo", `lock: "json:orderID"`, []string{
			fmt.Sprintf(`t.api:%d: POST /h: lock: key json:orderID: the request type Req has no json field "orderID" (its json fields: orderId)`, badLine)}},
		{"claim without jwt", `lock: "claim:userId"`, []string{
			fmt.Sprintf(`t.api:%d: POST /h: lock: key claim:userId: the route's group has no jwt:`, badLine)}},
		{"unknown property", "lock: \"ip\"\n\t\tlockTimeout: \"1s\"", []string{
			fmt.Sprintf(`t.api:%d: POST /h: unknown property lockTimeout`, badLine+1)}},
		{"several", "lockMode: once\n\t\tlock: \"json:x,ip\"\n\t\tlockMode: window", []string{
			fmt.Sprintf(`t.api:%d: POST /h: lock: key json:x: the request type Req has no json field "x"`, badLine+1),
			fmt.Sprintf(`t.api:%d: POST /h: lockMode is written twice in this @doc`, badLine+2)}},
		{"no lock", `lockMode: window`, []string{
			fmt.Sprintf(`t.api:%d: POST /h: a rule needs lock:`, badLine-1)}},
		{"quota outside rate", "lock: \"ip\"\n\t\tlockMode: window\n\t\tlockQuota: \"3\"", []string{
			fmt.Sprintf(`t.api:%d: POST /h: lockQuota is for rate mode only (this rule is in window mode)`, badLine+2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := writeAPI(t, fmt.Sprintf(badAPI, tc.props))
			_, err := collectRules(parseAPI(t, name), name, filepath.Base)
			if err == nil {
				t.Fatal("no error")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("error:\n%v\nwant %d lines", err, len(tc.want))
			}
			for i, want := range tc.want {
				if !strings.HasPrefix(lines[i], want) {
					t.Errorf("line %d of the error:\n%s\nwant it to start\n%s", i+1, lines[i], want)
				}
			}
		})
	}
}

// TestCollectRateRule: a rule in rate mode, from its @doc to its YAML,
// the quota quoted as goctl wants a number and written as one.
func TestCollectRateRule(t *testing.T) {
	name := writeAPI(t, fmt.Sprintf(badAPI, "lock: \"ip,json:orderId\"\n\t\tlockMode: rate\n\t\tlockQuota: \"3\"\n"+
		"\t\tlockPeriod: \"1m\"\n\t\tlockRateLimitHeaders: true"))
	rules, err := collectRules(parseAPI(t, name), name, filepath.Base)
	if err != nil {
		t.Fatal(err)
	}
	want := "- Method: POST\n  Path: /h\n  Keys: [ip, json:orderId]\n  Mode: rate\n  Quota: 3\n  Period: 1m\n  RateLimitHeaders: true\n"
	if got := renderRules(rules, ""); got != want {
		t.Fatalf("rules:\n%s\nwant\n%s", got, want)
	}
}

// TestRunWritesAndChecks: the plugin writes the rules between a YAML's
// markers, a second run leaves it unchanged, -check passes on it and
// fails, naming the line, once the file is edited; -o writes the rules
// alone; a missing YAML is named with the flag that names another.
func TestRunWritesAndChecks(t *testing.T) {
	dir := t.TempDir()
	yaml := "Name: shop\nLock:\n  Expire: 5s\n  Rules:\n    # goctl-zerolock: begin\n    # goctl-zerolock: end\n"
	if err := os.MkdirAll(filepath.Join(dir, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "etc", "shop-api.yaml") // the default: goctl's name for service shop-api
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	apiFile, err := filepath.Abs("testdata/shop.api")
	if err != nil {
		t.Fatal(err)
	}
	p := &plugin.Plugin{Api: parseAPI(t, apiFile), ApiFilePath: apiFile, Dir: dir}
	runOK := func(o options, want string) {
		t.Helper()
		var out bytes.Buffer
		if err := run(p, o, &out); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), want) {
			t.Fatalf("run said %q, want %q", out.String(), want)
		}
	}

	runOK(options{}, "etc/shop-api.yaml: wrote 4 rules from shop.api")
	written, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	indented := "    " + strings.ReplaceAll(strings.TrimSuffix(shopRules, "\n"), "\n", "\n    ") + "\n"
	if want := strings.Replace(yaml, "begin\n", "begin\n"+indented, 1); string(written) != want {
		t.Fatalf("wrote\n%s\nwant\n%s", written, want)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("file mode changed: %v, %v", info.Mode(), err)
	}
	runOK(options{}, "4 rules, unchanged")
	runOK(options{yaml: "etc/shop-api.yaml", check: true}, "etc/shop-api.yaml: 4 rules, as shop.api declares")

	edited := strings.Replace(string(written), "Retain: 1h", "Retain: 2h", 1)
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	err = run(p, options{check: true}, new(bytes.Buffer))
	if !errors.Is(err, errStale) || !strings.Contains(err.Error(), "etc/shop-api.yaml:13 is not what shop.api declares:\n"+
		"  file:       Retain: 2h\n  want:       Retain: 1h") {
		t.Fatalf("check of an edited file: %v", err)
	}

	runOK(options{out: "rules.yaml"}, "rules.yaml: wrote 4 rules")
	fragment, err := os.ReadFile(filepath.Join(dir, "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "# Code generated by goctl-zerolock from shop.api. DO NOT EDIT.\n" + shopRules; string(fragment) != want {
		t.Fatalf("fragment\n%s\nwant\n%s", fragment, want)
	}
	runOK(options{out: "rules.yaml", check: true}, "rules.yaml: 4 rules, as shop.api declares")
	if err := run(p, options{out: "missing.yaml", check: true}, new(bytes.Buffer)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("check of a missing fragment: %v", err)
	}
	if err := run(p, options{yaml: "etc/missing.yaml"}, new(bytes.Buffer)); !errors.Is(err, os.ErrNotExist) ||
		!strings.Contains(err.Error(), "etc/missing.yaml: no such file: name the service's YAML with -yaml FILE") {
		t.Fatalf("a missing YAML: %v", err)
	}
}

// TestParseOptions: the flags, and the refusals of two outputs and of
// stray arguments.
func TestParseOptions(t *testing.T) {
	o, err := parseOptions([]string{"-yaml", "etc/api.yaml", "-check"}, new(bytes.Buffer))
	if err != nil || o != (options{yaml: "etc/api.yaml", check: true}) {
		t.Fatalf("options %+v, %v", o, err)
	}
	if _, err := parseOptions([]string{"-yaml", "a.yaml", "-o", "b.yaml"}, new(bytes.Buffer)); err == nil {
		t.Fatal("-yaml and -o together accepted")
	}
	if _, err := parseOptions([]string{"etc/api.yaml"}, new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), `unexpected argument "etc/api.yaml"`) {
		t.Fatalf("a stray argument: %v", err)
	}
	var usage bytes.Buffer
	if _, err := parseOptions([]string{"-h"}, &usage); !errors.Is(err, flag.ErrHelp) || !strings.Contains(usage.String(), "-check") {
		t.Fatalf("-h: %v, %q", err, usage.String())
	}
}

// TestDemoRulesAreCommitted: in this process (no goctl build), the
// repository's etc/api.yaml holds the rules example/api/demo.api declares.
func TestDemoRulesAreCommitted(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	apiFile := filepath.Join(root, "example", "api", "demo.api")
	p := &plugin.Plugin{Api: parseAPI(t, apiFile), ApiFilePath: apiFile, Dir: root}
	var out bytes.Buffer
	if err := run(p, options{yaml: "etc/api.yaml", check: true}, &out); err != nil {
		t.Fatal(err)
	}
	if want := "etc/api.yaml: 6 rules, as demo.api declares"; !strings.Contains(out.String(), want) {
		t.Fatalf("run said %q, want %q", out.String(), want)
	}
}

// TestUnguardedRoute: a locked route whose group names no middleware is
// marked, for run to warn that its rule holds only under server.Use; one
// whose group names one is not.
func TestUnguardedRoute(t *testing.T) {
	name := writeAPI(t, `syntax = "v1"

service guard-api {
	@doc (
		lock: "ip"
	)
	@handler Open
	post /open
}

@server (
	middleware: Lock
)
service guard-api {
	@doc (
		lock: "ip"
	)
	@handler Guarded
	post /guarded
}
`)
	rules, err := collectRules(parseAPI(t, name), name, filepath.Base)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 2 || rules[0].unguarded == "" || rules[1].unguarded != "" {
		t.Fatalf("rules %+v: want /open marked unguarded and /guarded not", rules)
	}
	if !strings.HasSuffix(rules[0].unguarded, ":4") {
		t.Fatalf("unguarded at %q, want the @doc's line 4", rules[0].unguarded)
	}
}

// TestRunKeepsTheFileLoadable: a CRLF file gets CRLF rules (a -check of it
// then passes), and markers indented otherwise than the hand-written
// entries beside them, which would make a YAML go-zero cannot load, are
// refused before anything is written.
func TestRunKeepsTheFileLoadable(t *testing.T) {
	apiFile, err := filepath.Abs("testdata/shop.api")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, yaml, wantErr string
	}{
		{"crlf", "Name: shop\r\nLock:\r\n  Rules:\r\n    # goctl-zerolock: begin\r\n    # goctl-zerolock: end\r\n", ""},
		{"misindented", "Name: shop\nLock:\n  Rules:\n      - Method: GET\n        Path: /hand\n    # goctl-zerolock: begin\n    # goctl-zerolock: end\n",
			"would not load"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "shop.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			p := &plugin.Plugin{Api: parseAPI(t, apiFile), ApiFilePath: apiFile, Dir: dir}
			err := run(p, options{yaml: "shop.yaml"}, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("run = %v, want an error saying %q", err, tc.wantErr)
				}
				if b, _ := os.ReadFile(path); string(b) != tc.yaml {
					t.Fatal("the refused file was written")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(path)
			if strings.Count(string(b), "\n") != strings.Count(string(b), "\r\n") {
				t.Fatalf("a CRLF file got lines ended otherwise:\n%q", b)
			}
			if err := run(p, options{yaml: "shop.yaml", check: true}, io.Discard); err != nil {
				t.Fatalf("-check of what was written: %v", err)
			}
		})
	}
}
