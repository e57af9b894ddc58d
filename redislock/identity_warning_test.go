package redislock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"
	"github.com/zeromicro/go-zero/core/logx"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/testproc"
	"github.com/zerolock/zerolock/redislock"
)

// errorLogs collects what logx writes at error level, for a test that
// looks for a warning; logx is disabled again when the test ends.
type errorLogs struct {
	testproc.SyncBuffer
}

// count tells how many lines hold s.
func (l *errorLogs) count(s string) int {
	return strings.Count(l.String(), s)
}

func captureErrorLogs(t *testing.T) *errorLogs {
	t.Helper()
	logs := new(errorLogs)
	logx.SetLevel(logx.ErrorLevel)
	logx.SetWriter(logx.NewWriter(logs))
	t.Cleanup(logx.Disable)
	return logs
}

// identityWarning is the part of the warning a lock logs that names the
// server at addr.
func identityWarning(addr string) string { return "the server at " + addr + " answered" }

// The drop-in drops in: on a server that rejects CLIENT SETINFO
// (redis-server 7.0, Debian 12's, and miniredis) a go-zero store with its
// default RedisConf, identity on, takes and frees every kind of lock, as
// go-zero's own RedisLock does. The hazard is logged at error level once
// per address, naming the fix, however many stores and locks use the
// address, and the server is asked once. The start-up check (NewBackend's
// Check, which the middleware and the interceptor run) still refuses the
// store. Before, every call of these locks returned ErrIdentityRejected.
func TestIdentityRejectedLocksWorkAndWarnOnce(t *testing.T) {
	logs := captureErrorLogs(t)
	servers := []struct {
		name string
		addr func(t *testing.T) string
	}{
		{"miniredis", func(t *testing.T) string { return redistest.Miniredis(t).Addr() }},
		{"redis-server", func(t *testing.T) string { return redistest.Start(t).Addr() }},
	}
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			addr := srv.addr(t) // go-zero shares one client per address: this test's own
			rejects := rejectsSetinfo(t, addr)
			if !rejects {
				t.Logf("the server at %s accepts CLIENT SETINFO: no warning is due", addr)
			}
			var probes setinfoCounter
			conf := zredis.RedisConf{Host: addr, Type: zredis.NodeType} // go-zero's defaults: identity on
			store := zredis.MustNewRedis(conf, zredis.WithHook(&probes))
			other := zredis.MustNewRedis(conf, zredis.WithHook(&probes)) // a second store on the address
			ctx := context.Background()

			for i, s := range []*zredis.Redis{store, other, store} {
				lock := redislock.NewRedisLock(s, "k")
				lock.SetExpire(5)
				mustAcquire(t, lock, true)
				mustAcquire(t, redislock.NewRedisLock(s, "k"), false)
				mustRelease(t, lock, true)

				ms := redislock.New(redislock.GoZeroStore(s), "k-ms")
				if ok, err := ms.AcquireCtx(ctx); !ok || err != nil {
					t.Fatalf("round %d: New's lock: Acquire = %v, %v", i, ok, err)
				}
				if ok, err := ms.ReleaseCtx(ctx); !ok || err != nil {
					t.Fatalf("round %d: New's lock: Release = %v, %v", i, ok, err)
				}

				sem, err := redislock.NewSemaphore(redislock.GoZeroStore(s), "k-sem", 1)
				if err != nil {
					t.Fatal(err)
				}
				mustTakePermit(t, sem, true, "semaphore")
				mustFreePermit(t, sem, true, "semaphore")

				lk := redislock.NewBackend(redislock.GoZeroStore(s)).NewLocker("k-backend", zerolock.LockerOptions{Expiry: 5 * time.Second})
				if ok, err := lk.AcquireCtx(ctx); !ok || err != nil {
					t.Fatalf("round %d: a backend's lock: Acquire = %v, %v", i, ok, err)
				}
				if ok, err := lk.ReleaseCtx(ctx); !ok || err != nil {
					t.Fatalf("round %d: a backend's lock: Release = %v, %v", i, ok, err)
				}
			}

			want := 0
			if rejects {
				want = 1
			}
			if got := logs.count(identityWarning(addr)); got != want {
				t.Fatalf("the warning for %s was logged %d times, want %d; logs:\n%s", addr, got, want, logs)
			}
			if rejects && !strings.Contains(logs.String(), "DisableIdentity: true") {
				t.Fatalf("the warning does not name the fix; logs:\n%s", logs)
			}
			if got := probes.n.Load(); got != 1 {
				t.Fatalf("the server was asked %d times, want once per address", got)
			}

			// The start-up check still refuses the store, and logs nothing.
			for name, check := range map[string]func() error{
				"CheckGoZeroStore": func() error { return redislock.CheckGoZeroStore(ctx, store) },
				"NewBackend.Check": func() error { return redislock.NewBackend(redislock.GoZeroStore(store)).(zerolock.Checker).Check(ctx) },
			} {
				err := check()
				if !rejects {
					if err != nil {
						t.Fatalf("%s on a server that accepts CLIENT SETINFO = %v", name, err)
					}
					continue
				}
				if !errors.Is(err, redislock.ErrIdentityRejected) || !errors.Is(err, zerolock.ErrMisconfigured) ||
					!strings.Contains(err.Error(), "DisableIdentity: true") {
					t.Fatalf("%s = %v; want ErrIdentityRejected and ErrMisconfigured naming DisableIdentity: true", name, err)
				}
			}
			if got := logs.count(identityWarning(addr)); got != want {
				t.Fatalf("after the start-up checks the warning for %s was logged %d times, want %d", addr, got, want)
			}
		})
	}
}

// rejectsSetinfo asks the server at addr, on a client of its own, whether
// it rejects CLIENT SETINFO.
func rejectsSetinfo(t *testing.T, addr string) bool {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = c.Close() })
	return c.Do(context.Background(), "client", "setinfo", "lib-ver", "1").Err() != nil
}

// A store with identity off is never asked about: its locks need no round
// trip more, and nothing is logged.
func TestIdentityOffNeedsNoProbe(t *testing.T) {
	logs := captureErrorLogs(t)
	var probes setinfoCounter
	mr := redistest.Miniredis(t) // hooked: go-zero keeps its client for the address
	store := zredis.New(mr.Addr(), zredis.WithIdentity(), zredis.WithHook(&probes))
	lock := redislock.NewRedisLock(store, "k")
	mustAcquire(t, lock, true)
	mustRelease(t, lock, true)
	if got := probes.n.Load(); got != 0 {
		t.Fatalf("a store with identity off was asked about CLIENT SETINFO %d times", got)
	}
	if got := logs.count(identityWarning(mr.Addr())); got != 0 {
		t.Fatalf("a store with identity off was warned about; logs:\n%s", logs)
	}
}

// A server whose answer to CLIENT SETINFO is no verdict (a proxy's error
// this package does not recognise) takes the lock's commands all the same,
// and a burst of them asks it once: every failed probe would count in
// go-zero's breaker. The start-up check reports the answer. Before, every
// call failed with that answer.
func TestIdentityNoVerdictLockWorks(t *testing.T) {
	logs := captureErrorLogs(t)
	mr := redistest.Miniredis(t) // identity on and hooked: go-zero keeps its client for the address
	mr.Server().SetPreHook(func(c *server.Peer, cmd string, args ...string) bool {
		if cmd == "CLIENT" {
			c.WriteError("ERR unsupported command 'client'")
			return true
		}
		return false
	})
	var probes setinfoCounter
	store := zredis.New(mr.Addr(), zredis.WithHook(&probes))
	for i := 0; i < 5; i++ {
		lock := redislock.NewRedisLock(store, "k")
		mustAcquire(t, lock, true)
		mustRelease(t, lock, true)
	}
	if got := probes.n.Load(); got != 1 {
		t.Fatalf("the server was asked %d times, want once until it is time to ask again", got)
	}
	if got := logs.count(identityWarning(mr.Addr())); got != 0 {
		t.Fatalf("no verdict, yet a warning; logs:\n%s", logs)
	}
	err := redislock.CheckGoZeroStore(context.Background(), store)
	if err == nil || errors.Is(err, redislock.ErrIdentityRejected) || !strings.Contains(err.Error(), "unsupported command") {
		t.Fatalf("CheckGoZeroStore = %v, want the server's answer, not ErrIdentityRejected", err)
	}
}
