package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// testShow names files relative to the package's folder, as goctl's -dir.
func testShow(t *testing.T) func(string) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return shower(wd)
}

// TestLocate: the routes of an .api and of the file it imports, in the
// order they are written, each with its line, its @doc's line and its
// properties' lines.
func TestLocate(t *testing.T) {
	sites, order, err := locate("testdata/shop.api", testShow(t))
	if err != nil {
		t.Fatal(err)
	}
	wantOrder := []string{
		routeID("/v1", "post", "/orders/:id"),
		routeID("/v1", "get", "/orders/:id"),
		routeID("/v1", "post", "/orders/:id/pay"),
		routeID("", "get", "/search"),
		routeID("", "get", "/ping"),
		routeID("admin", "post", "/rebuild/:id"),
	}
	if !reflect.DeepEqual(order, wantOrder) {
		t.Fatalf("order %q\nwant  %q", order, wantOrder)
	}
	for id, want := range map[string]site{
		wantOrder[0]: {file: "testdata/shop.api", line: 55, docLine: 50, props: map[string]int{"summary": 51, "lock": 52}},
		wantOrder[1]: {file: "testdata/shop.api", line: 58, docLine: 58, props: map[string]int{}},
		wantOrder[4]: {file: "testdata/shop.api", line: 90, docLine: 88, props: map[string]int{}},
		wantOrder[5]: {file: filepath.Join("testdata", "shopadmin.api"), line: 20, docLine: 12, props: map[string]int{
			"lock": 13, "lockMode": 14, "lockDisableRenew": 15, "lockSharedKeys": 16, "lockSkipRouteCheck": 17}},
	} {
		if got := sites[id]; !reflect.DeepEqual(got, want) {
			t.Errorf("site of %q = %+v, want %+v", id, got, want)
		}
	}
	if pay := sites[wantOrder[2]]; pay.propLine("lockMaxResponseBytes") != 68 || pay.propLine("lockPermits") != 60 {
		t.Errorf("pay's lines: lockMaxResponseBytes %d, a property it lacks %d", pay.propLine("lockMaxResponseBytes"), pay.propLine("lockPermits"))
	}
}

// TestLocateTwice notes a lock property written twice in one @doc, which
// goctl's spec folds into one, even after another property's repeat.
func TestLocateTwice(t *testing.T) {
	name := writeAPI(t, `syntax = "v1"

service twice-api {
	@doc (
		summary:  "a"
		summary:  "b"
		lock:     "ip"
		lockMode: window
		lockMode: replay
	)
	@handler H
	post /h
}
`)
	sites, order, err := locate(name, filepath.Base)
	if err != nil {
		t.Fatal(err)
	}
	if s := sites[order[0]]; s.twice != "lockMode" || s.twiceLine != 9 || s.props["lockMode"] != 9 {
		t.Fatalf("site %+v, want lockMode twice, on line 9", s)
	}
}

// writeAPI writes an .api file into a temporary folder of its own.
func writeAPI(t *testing.T, text string) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "t.api")
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}
