package redistest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A Flavour is a kind of server the tests can start: the redis-server on
// PATH (Debian 12's 7.0 under make test), or Valkey 9 or Redis 8 from
// Debian sid, which make deps fetches with scripts/sid-servers.sh and runs
// through the wrappers it writes (sid's own dynamic loader and libraries,
// nothing installed into /).
//
// A sid flavour's server is the one its environment variable names
// (ZEROLOCK_VALKEY_SERVER, ZEROLOCK_REDIS8_SERVER; make exports both), or
// else the wrapper in the repository's default cache,
// .cache/sid-servers/bin. When neither is there its tests skip, or fail
// under ZEROLOCK_REQUIRE_REDIS=1, as for a missing redis-server.
type Flavour struct {
	// Name names the flavour in subtest names and reports: "redis",
	// "valkey-9", "redis-8".
	Name string

	binary   string // looked up on PATH (SystemRedis)
	env      string // the variable naming the server's path (sid flavours)
	wrapper  string // the wrapper's name in the sid-servers cache
	product  string // what INFO must call the server: "redis" or "valkey"
	minMajor int    // the oldest major version INFO may report (0: any)
}

var (
	// SystemRedis is the redis-server found on PATH: Debian 12's 7.0
	// under make test, the server Start starts.
	// Any version of either product passes: some distributions install
	// Valkey as redis-server.
	SystemRedis = Flavour{Name: "redis", binary: "redis-server"}

	// Valkey9 is Valkey 9 or later (sid has 9.1): it has DELIFEQ, and its
	// INFO reports valkey_version besides a redis_version of 7.2.4.
	Valkey9 = Flavour{Name: "valkey-9", env: "ZEROLOCK_VALKEY_SERVER", wrapper: "valkey-server",
		product: "valkey", minMajor: 9}

	// Redis8 is Redis 8 or later (sid has 8.0, which lacks 8.4's DELEX).
	Redis8 = Flavour{Name: "redis-8", env: "ZEROLOCK_REDIS8_SERVER", wrapper: "redis8-server",
		product: "redis", minMajor: 8}
)

// Flavours returns every flavour: SystemRedis, Valkey9 and Redis8.
func Flavours() []Flavour {
	return []Flavour{SystemRedis, Valkey9, Redis8}
}

// NewFlavours returns the flavours other than SystemRedis, for tests that
// add them to what the system's server already covers.
func NewFlavours() []Flavour {
	return []Flavour{Valkey9, Redis8}
}

// String returns the flavour's Name.
func (f Flavour) String() string {
	return f.Name
}

// errNotFound marks a server binary that is not there, as opposed to one
// that is there and broken.
var errNotFound = errors.New("not found")

// Path returns the server binary (or wrapper) of the flavour. Its error
// says where it looked and how to get one.
func (f Flavour) Path() (string, error) {
	if f.binary != "" {
		path, err := exec.LookPath(f.binary)
		if err != nil {
			return "", fmt.Errorf("%s %w on PATH (apt-get install redis-server)", f.binary, errNotFound)
		}
		return path, nil
	}
	if p := os.Getenv(f.env); p != "" {
		if err := executable(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w (make deps writes it with scripts/sid-servers.sh)", f.env, p, err)
		}
		return p, nil
	}
	if root := repoRoot(); root != "" {
		p := filepath.Join(root, ".cache", "sid-servers", "bin", f.wrapper)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s %w: %s is unset and .cache/sid-servers/bin/%s does not exist "+
		"(make deps runs scripts/sid-servers.sh, which fetches it from Debian sid)", f.Name, errNotFound, f.env, f.wrapper)
}

func executable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errNotFound
	case err != nil:
		return err
	case fi.IsDir() || fi.Mode()&0o111 == 0:
		return errors.New("not an executable file")
	}
	return nil
}

// repoRoot is the nearest directory above the working directory (a
// package's, under go test) that holds scripts/sid-servers.sh, or "".
func repoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "scripts", "sid-servers.sh")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// StartFlavour is Start for a server of flavour f: on a free loopback
// port, persistence off, stopped when the test ends. A missing server
// skips the test, or fails it under ZEROLOCK_REQUIRE_REDIS=1; a server
// whose INFO is not of the flavour (an older Valkey named by
// ZEROLOCK_VALKEY_SERVER) fails it.
func StartFlavour(tb testing.TB, f Flavour, args ...string) *Server {
	tb.Helper()
	path, err := f.Path()
	if err != nil {
		if !errors.Is(err, errNotFound) || os.Getenv(RequireEnv) == "1" {
			tb.Fatalf("redistest: %s: %v; with %s=%s that is a failure", f.Name, err, RequireEnv, os.Getenv(RequireEnv))
		}
		tb.Skipf("redistest: %s: %v", f.Name, err)
	}
	s, err := launchFlavour(f, path, tb.TempDir(), args...)
	if err != nil {
		tb.Fatalf("redistest: start %s (%s): %v", f.Name, path, err)
	}
	tb.Cleanup(s.Kill)
	return s
}

// LaunchFlavour is Launch for a server of flavour f (the bench tool): in
// dir, on a free loopback port, persistence off; the caller stops it with
// Kill. Its error says when the server is missing or not of the flavour.
func LaunchFlavour(f Flavour, dir string, args ...string) (*Server, error) {
	path, err := f.Path()
	if err != nil {
		return nil, err
	}
	return launchFlavour(f, path, dir, args...)
}

func launchFlavour(f Flavour, path, dir string, args ...string) (*Server, error) {
	s, err := launch(path, dir, args...)
	if err != nil {
		return nil, err
	}
	s.flavour = f
	if err := f.check(s.version); err != nil {
		s.Kill()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// check refuses a server that INFO says is not of the flavour.
func (f Flavour) check(v ServerVersion) error {
	if f.product != "" && v.Product != f.product {
		return fmt.Errorf("the server is %s, not %s", v, f.product)
	}
	if major, _, _ := strings.Cut(v.Version, "."); f.minMajor > 0 {
		if n, err := strconv.Atoi(major); err != nil || n < f.minMajor {
			return fmt.Errorf("the server is %s, want %s %d or later", v, f.product, f.minMajor)
		}
	}
	return nil
}

// EachFlavour runs body as a subtest named after each flavour of fs
// (every flavour when fs is empty), each on a server of its own started
// with args.
func EachFlavour(t *testing.T, body func(t *testing.T, srv *Server), fs ...Flavour) {
	t.Helper()
	if len(fs) == 0 {
		fs = Flavours()
	}
	for _, f := range fs {
		t.Run(f.Name, func(t *testing.T) {
			body(t, StartFlavour(t, f))
		})
	}
}

// A ServerVersion is what a server says it is in INFO server.
type ServerVersion struct {
	// Product is "valkey" for Valkey (INFO's server_name), "redis" for
	// Redis.
	Product string
	// Version is the product's own version: valkey_version for Valkey,
	// whose redis_version stays at 7.2.4, redis_version for Redis.
	Version string
}

// String returns "valkey 9.1.2" or "redis 7.0.15".
func (v ServerVersion) String() string {
	return v.Product + " " + v.Version
}

func versionFromInfo(server map[string]string) ServerVersion {
	if name := server["server_name"]; name != "" && name != "redis" {
		if v := server[name+"_version"]; v != "" {
			return ServerVersion{Product: name, Version: v}
		}
	}
	return ServerVersion{Product: "redis", Version: server["redis_version"]}
}

// Version returns what the server said it is in INFO server when it last
// started.
func (s *Server) Version() ServerVersion {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// Flavour returns the flavour the server was started as: SystemRedis
// unless StartFlavour or LaunchFlavour started it.
func (s *Server) Flavour() Flavour {
	if s.flavour.Name == "" {
		return SystemRedis
	}
	return s.flavour
}
