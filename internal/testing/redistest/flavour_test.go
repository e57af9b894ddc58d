package redistest

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// Each flavour starts, says in INFO what it is, and is the server its
// name promises: Valkey 9 answers DELIFEQ (1 when it deleted, 0 when the
// value differs), Redis 8.0 does not know it.
func TestEachFlavour(t *testing.T) {
	EachFlavour(t, func(t *testing.T, srv *Server) {
		v := srv.Version()
		t.Logf("%s: %s", srv.Flavour(), v)
		if v.Product == "" || v.Version == "" {
			t.Fatalf("no version from INFO: %+v", v)
		}
		if err := srv.Flavour().check(v); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		c := srv.Client(t)
		if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		switch srv.Flavour().Name {
		case Valkey9.Name:
			if v.Product != "valkey" {
				t.Fatalf("Valkey9 started %s", v)
			}
			if n, err := c.Do(ctx, "delifeq", "k", "other").Int(); err != nil || n != 0 {
				t.Fatalf("DELIFEQ with another value = %d, %v; want 0", n, err)
			}
			if n, err := c.Do(ctx, "delifeq", "k", "v").Int(); err != nil || n != 1 {
				t.Fatalf("DELIFEQ with the value = %d, %v; want 1", n, err)
			}
		case Redis8.Name:
			if v.Product != "redis" || !strings.HasPrefix(v.Version, "8.") {
				t.Fatalf("Redis8 started %s", v)
			}
		}
		// Kill and Restart keep the flavour and its version.
		srv.Kill()
		srv.Restart(t)
		if got := srv.Version(); got != v {
			t.Fatalf("after Restart the server is %s, was %s", got, v)
		}
	})
}

func TestVersionFromInfo(t *testing.T) {
	for _, tc := range []struct {
		info map[string]string
		want ServerVersion
	}{
		{map[string]string{"redis_version": "7.0.15"}, ServerVersion{"redis", "7.0.15"}},
		{map[string]string{"redis_version": "8.0.6"}, ServerVersion{"redis", "8.0.6"}},
		{map[string]string{"redis_version": "7.2.4", "server_name": "valkey", "valkey_version": "9.1.2"},
			ServerVersion{"valkey", "9.1.2"}},
	} {
		if got := versionFromInfo(tc.info); got != tc.want {
			t.Errorf("versionFromInfo(%v) = %s, want %s", tc.info, got, tc.want)
		}
	}
}

// A server that is not of the flavour is refused, so that a test named
// valkey-9 never runs on Valkey 8 or on Redis.
func TestFlavourCheck(t *testing.T) {
	for _, tc := range []struct {
		f  Flavour
		v  ServerVersion
		ok bool
	}{
		{Valkey9, ServerVersion{"valkey", "9.1.2"}, true},
		{Valkey9, ServerVersion{"valkey", "10.0.0"}, true},
		{Valkey9, ServerVersion{"valkey", "8.1.1"}, false},
		{Valkey9, ServerVersion{"redis", "9.0.0"}, false},
		{Redis8, ServerVersion{"redis", "8.0.6"}, true},
		{Redis8, ServerVersion{"redis", "7.0.15"}, false},
		{Redis8, ServerVersion{"valkey", "9.1.2"}, false},
		{SystemRedis, ServerVersion{"redis", "7.0.15"}, true},
		{SystemRedis, ServerVersion{"valkey", "8.1.1"}, true},
	} {
		if err := tc.f.check(tc.v); (err == nil) != tc.ok {
			t.Errorf("%s.check(%s) = %v, want ok %v", tc.f, tc.v, err, tc.ok)
		}
	}
}

// A variable that names a missing file is reported as missing (a skip
// without make test); one that names a directory is an error.
func TestFlavourPathFromEnv(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(Valkey9.env, dir+"/nothing")
	if _, err := Valkey9.Path(); !errors.Is(err, errNotFound) || !strings.Contains(err.Error(), Valkey9.env) {
		t.Fatalf("Path with %s naming a missing file = %v", Valkey9.env, err)
	}
	t.Setenv(Valkey9.env, dir)
	if _, err := Valkey9.Path(); err == nil || errors.Is(err, errNotFound) || !strings.Contains(err.Error(), "not an executable") {
		t.Fatalf("Path with %s naming a directory = %v", Valkey9.env, err)
	}
}
