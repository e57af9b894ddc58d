package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestKeptSection: the hand-written section of BENCHMARKS.md, markers
// included, survives make bench's rewrite; a file without one keeps
// nothing.
func TestKeptSection(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "BENCHMARKS.md")
	if got := keptSection(path); got != "" {
		t.Fatalf("no file: kept %q", got)
	}
	section := keptBegin + "\n## peerbench\n\nthree runs\n" + keptEnd
	if err := os.WriteFile(path, []byte("# Benchmarks\n\nold tables\n\n"+section+"\n\nmore old tables\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := keptSection(path); got != section+"\n\n" {
		t.Fatalf("kept %q, want the section", got)
	}
	if err := os.WriteFile(path, []byte("# Benchmarks\n\nno section\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := keptSection(path); got != "" {
		t.Fatalf("kept %q from a file without markers", got)
	}
}
