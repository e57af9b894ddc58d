package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	rawfloor "github.com/zerolock/zerolock/internal/testing/floor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// The Valkey scenarios run on one Valkey 9 server (Debian sid's, through
// the wrapper scripts/sid-servers.sh writes; make deps fetches it), which
// has DELIFEQ, a compare-and-delete command. They measure, on that one
// server and in one run, a release WithoutWakeups by DELIFEQ against the
// same release by the script: the Lua row's client logs in as an ACL user
// without DELIFEQ, whose first release is refused (NOPERM) and falls back
// to the script, as on a server without the command, and every later one
// runs the script. The default lock (wake-ups on, nobody waiting) is
// measured there too.
var valkeyScenarios = []scenario{
	{"Valkey 9: distinct keys, 1 goroutine", 1, false},
	{"Valkey 9: distinct keys, 50 goroutines", 50, false},
}

// luaOnlyUser is the Valkey ACL user without DELIFEQ.
const luaOnlyUser, luaOnlyPass = "zerolock-lua", "zerolock-lua"

var valkeyContenders = []cycleContender{
	{"floor on Valkey (SET NX + EVALSHA)", func(c clients, key string) cycler {
		return &floor{client: c.redis, key: key, token: "floor-" + key}
	}},
	{"floor on Valkey, native (SET NX + DELIFEQ)", func(c clients, key string) cycler {
		return cycleFunc(func(ctx context.Context) (bool, error) {
			token := "floor-" + key
			ok, err := c.redis.SetNX(ctx, key, token, expiry).Result()
			if err != nil || !ok {
				return false, err
			}
			return true, c.redis.Do(ctx, "delifeq", key, token).Err()
		})
	}},
	{"zerolock WithoutWakeups, DELIFEQ release", func(c clients, key string) cycler {
		l := redislock.New(c.redis, key, redislock.WithExpiry(expiry), redislock.WithTolerance(0),
			redislock.WithoutWakeups())
		return lockCycler{l.AcquireCtx, l.ReleaseCtx}
	}},
	{"zerolock WithoutWakeups, Lua release (ACL user without DELIFEQ)", func(c clients, key string) cycler {
		l := redislock.New(c.luaOnly, key, redislock.WithExpiry(expiry), redislock.WithTolerance(0),
			redislock.WithoutWakeups())
		return lockCycler{l.AcquireCtx, l.ReleaseCtx}
	}},
	{"zerolock, default options (wake-ups on)", func(c clients, key string) cycler {
		l := redislock.New(c.redis, key, redislock.WithExpiry(expiry), redislock.WithTolerance(0))
		return lockCycler{l.AcquireCtx, l.ReleaseCtx}
	}},
}

// valkeyBench is the Valkey server of the Valkey scenarios and its clients.
type valkeyBench struct {
	srv     *redistest.Server
	dir     string
	admin   *redis.Client
	cl      clients
	version string
}

// startValkey starts a Valkey 9 server on a loopback port, with the ACL
// user the Lua row logs in as. Its error says why there is none (the
// wrapper is missing: make deps fetches it).
func startValkey() (*valkeyBench, error) {
	dir, err := os.MkdirTemp("", "zerolock-bench-valkey-")
	if err != nil {
		return nil, err
	}
	srv, err := redistest.LaunchFlavour(redistest.Valkey9, dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	v := &valkeyBench{srv: srv, dir: dir, version: srv.Version().String()}
	v.admin = redis.NewClient(&redis.Options{Addr: srv.Addr()})
	ctx := context.Background()
	err = v.admin.Do(ctx, "acl", "setuser", luaOnlyUser, "on", ">"+luaOnlyPass, "~*", "&*", "+@all", "-delifeq").Err()
	if err != nil {
		v.stop()
		return nil, fmt.Errorf("create the ACL user without DELIFEQ: %w", err)
	}
	v.cl = clients{
		redis:   redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 64}),
		luaOnly: redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 64, Username: luaOnlyUser, Password: luaOnlyPass}),
	}
	if err := rawfloor.Load(ctx, v.cl.redis); err != nil {
		v.stop()
		return nil, err
	}
	// The two rows must release as they say: the default user by DELIFEQ,
	// the ACL user by the script.
	if info, err := v.cl.redis.Do(ctx, "command", "info", "delifeq").Slice(); err != nil || len(info) != 1 || info[0] == nil {
		v.stop()
		return nil, fmt.Errorf("%s: COMMAND INFO DELIFEQ answered %v, %v: no DELIFEQ", v.version, info, err)
	}
	if err := v.cl.luaOnly.Do(ctx, "delifeq", "bench:probe", "x").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		v.stop()
		return nil, fmt.Errorf("the ACL user's DELIFEQ answered %v, want NOPERM", err)
	}
	return v, nil
}

func (v *valkeyBench) stop() {
	for _, c := range []*redis.Client{v.cl.redis, v.cl.luaOnly, v.admin} {
		if c != nil {
			_ = c.Close()
		}
	}
	v.srv.Kill()
	os.RemoveAll(v.dir)
}

// runValkey runs one round of the Valkey scenarios.
func runValkey(v *valkeyBench, rep *report, r int, d time.Duration) {
	for _, sc := range valkeyScenarios {
		if !selected(sc.name) {
			continue
		}
		runCycles(v.cl, v.admin, valkeyContenders[0], sc, -1-r, d/5)
		for _, i := range rotation(len(valkeyContenders), r) {
			c := valkeyContenders[i]
			s := runCycles(v.cl, v.admin, c, sc, r, d)
			rep.add(sc.name, c.name, s)
			fmt.Fprintf(os.Stderr, "round %d  %-34s %-26s %9.0f op/s  %5.1f µs/op in Redis  %d errors\n",
				r+1, sc.name, shorten(c.name), s.ops, s.usecOp, s.errors)
		}
	}
}
