package redislock_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/internal/testing/faultproxy"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// errorReplies is how many error replies the server has sent, from INFO
// stats: an "unknown command" is one, and go-zero's breaker counts each
// one it sees as a failure.
func errorReplies(t *testing.T, admin *redis.Client) int64 {
	t.Helper()
	info, err := admin.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatalf("INFO stats: %v", err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_error_replies:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("total_error_replies %q: %v", v, err)
			}
			return n
		}
	}
	t.Fatal("INFO stats has no total_error_replies")
	return 0
}

// scriptCalls counts the scripts a server has run.
func scriptCalls(t *testing.T, admin *redis.Client) int64 {
	t.Helper()
	return redistest.Calls(t, admin, "evalsha", "eval")
}

// cacheReleaseScript has the server cache the release script, as a default
// lock's first release does, so that no EVALSHA of the tests gets NOSCRIPT
// (an error reply) from a fresh server.
func cacheReleaseScript(t *testing.T, client *redis.Client) {
	t.Helper()
	lock := redislock.New(client, "zerolock-test:cache-release-script")
	lock.SetExpire(30)
	mustAcquire(t, lock, true)
	mustRelease(t, lock, true)
}

// TestNativeReleaseOnValkey: on Valkey 9, on both stores, a release
// WithoutWakeups is one DELIFEQ, no script; the server is asked once per
// store (COMMAND INFO, no error reply for go-zero's breaker to count); a
// release of a lock another holder took since answers false and leaves
// that holder's key; a default release still runs the script.
func TestNativeReleaseOnValkey(t *testing.T) {
	srv := redistest.StartFlavour(t, redistest.Valkey9)
	cacheReleaseScript(t, srv.Client(t))
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		// Error replies are counted around the releases only: a go-redis
		// client's new connection may draw some (a handshake the server
		// does not know), which are not the lock's.
		var errs int64
		asked := redistest.Calls(t, admin, "command|info")
		for i := 0; i < 5; i++ {
			lock := b.newLock(key+":"+strconv.Itoa(i), redislock.WithoutWakeups())
			lock.SetExpire(30)
			mustAcquire(t, lock, true)
			dels, scripts, e := redistest.Calls(t, admin, "delifeq"), scriptCalls(t, admin), errorReplies(t, admin)
			mustRelease(t, lock, true)
			errs += errorReplies(t, admin) - e
			if d, s := redistest.Calls(t, admin, "delifeq")-dels, scriptCalls(t, admin)-scripts; d != 1 || s != 0 {
				t.Fatalf("release %d: %d DELIFEQ and %d scripts, want 1 and 0", i, d, s)
			}
			if n, err := admin.Exists(context.Background(), key+":"+strconv.Itoa(i)).Result(); err != nil || n != 0 {
				t.Fatalf("key after the release: exists=%d, %v", n, err)
			}
		}
		if n := redistest.Calls(t, admin, "command|info") - asked; n != 1 {
			t.Errorf("the store asked the server %d times, want once", n)
		}
		if errs != 0 {
			t.Errorf("%d error replies while detecting and releasing", errs)
		}
		if got := redislock.NativeReleaseOf(b.store()); got != "delifeq" {
			t.Errorf("the store releases with %s, want delifeq", got)
		}

		// Taken over (expired, say, and taken by another holder): the
		// release must not delete the new holder's key.
		quiet := b.newLock(key, redislock.WithoutWakeups())
		quiet.SetExpire(30)
		mustAcquire(t, quiet, true)
		if err := admin.Set(context.Background(), key, "another holder", 0).Err(); err != nil {
			t.Fatal(err)
		}
		mustRelease(t, quiet, false)
		if v, err := admin.Get(context.Background(), key).Result(); err != nil || v != "another holder" {
			t.Fatalf("the other holder's key after a release = %q, %v", v, err)
		}
		// A key of another type: not ours, false with no error, as the
		// script answers, and the key stays.
		if err := admin.Del(context.Background(), key).Err(); err != nil {
			t.Fatal(err)
		}
		mustAcquire(t, quiet, true)
		if err := admin.Del(context.Background(), key).Err(); err != nil {
			t.Fatal(err)
		}
		if err := admin.HSet(context.Background(), key, "f", "v").Err(); err != nil {
			t.Fatal(err)
		}
		dels := redistest.Calls(t, admin, "delifeq")
		mustRelease(t, quiet, false)
		if d := redistest.Calls(t, admin, "delifeq") - dels; d != 1 {
			t.Errorf("release of a hash key: %d DELIFEQ, want 1", d)
		}
		if typ, err := admin.Type(context.Background(), key).Result(); err != nil || typ != "hash" {
			t.Fatalf("the hash after a release: type %q, %v", typ, err)
		}
		if err := admin.Del(context.Background(), key).Err(); err != nil {
			t.Fatal(err)
		}

		loud := b.newLock(key)
		loud.SetExpire(30)
		mustAcquire(t, loud, true)
		dels, scripts := redistest.Calls(t, admin, "delifeq"), scriptCalls(t, admin)
		mustRelease(t, loud, true)
		if d, s := redistest.Calls(t, admin, "delifeq")-dels, scriptCalls(t, admin)-scripts; d != 0 || s != 1 {
			t.Fatalf("a default release ran %d DELIFEQ and %d scripts, want 0 and 1", d, s)
		}
	})
}

// TestNativeReleaseOlderServers: on redis-server 7.0 and Redis 8.0 (no
// DELIFEQ; DELEX IFEQ came in 8.4) a release WithoutWakeups runs the
// script, and detecting that cost no error reply.
func TestNativeReleaseOlderServers(t *testing.T) {
	redistest.EachFlavour(t, func(t *testing.T, srv *redistest.Server) {
		cacheReleaseScript(t, srv.Client(t))
		eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
			lock := b.newLock(key, redislock.WithoutWakeups())
			lock.SetExpire(30)
			for i := 0; i < 3; i++ {
				mustAcquire(t, lock, true)
				scripts, errs := scriptCalls(t, admin), errorReplies(t, admin)
				mustRelease(t, lock, true)
				if s := scriptCalls(t, admin) - scripts; s != 1 {
					t.Fatalf("release %d ran %d scripts, want 1", i, s)
				}
				if n := errorReplies(t, admin) - errs; n != 0 {
					t.Errorf("release %d: %d error replies while detecting and releasing", i, n)
				}
			}
			if got := redislock.NativeReleaseOf(b.store()); got != "script" {
				t.Errorf("the store releases with %s, want script", got)
			}
		})
	}, redistest.SystemRedis, redistest.Redis8)
}

// TestNativeReleaseFailover: a store whose server changes under it from
// Valkey 9 to redis-server 7.0 (a proxy moved from one to the other, as a
// failover to an older replica looks to a client): the first release on
// the older server gets "unknown command" for its DELIFEQ and runs the
// script in the same call, which releases; the next releases run the
// script directly; once the store is asked again, back on Valkey, DELIFEQ
// is used again.
func TestNativeReleaseFailover(t *testing.T) {
	valkey := redistest.StartFlavour(t, redistest.Valkey9)
	older := redistest.Start(t)
	valkeyAdmin, olderAdmin := valkey.Client(t), older.Client(t)
	cacheReleaseScript(t, olderAdmin)
	proxy := faultproxy.Start(t, valkey.Addr())
	// Every command on a connection of its own: a pooled connection that
	// Retarget closed is found closed only once its FIN has been
	// processed, which a loaded machine defers, and the lock's acquire,
	// sent once, would fail with EOF (go-zero's client resends). No CLIENT
	// SETINFO, which 7.0 rejects: the test counts 7.0's error replies.
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ConnMaxIdleTime: time.Nanosecond, DisableIdentity: true})
	t.Cleanup(func() { _ = client.Close() })
	zstore := zredis.MustNewRedis(zredis.RedisConf{Host: proxy.Addr(), Type: zredis.NodeType, NonBlock: true,
		DisableIdentity: true})
	for _, b := range []backend{
		{"go-redis", func(key string, opts ...redislock.Option) *redislock.RedisLock {
			return redislock.New(client, key, opts...)
		}, func() redislock.Store { return client }},
		{"go-zero", func(key string, opts ...redislock.Option) *redislock.RedisLock {
			return redislock.NewRedisLock(zstore, key, opts...)
		}, func() redislock.Store { return redislock.GoZeroStore(zstore) }},
	} {
		t.Run(b.name, func(t *testing.T) {
			key := "zerolock-test:" + t.Name()
			proxy.Retarget(valkey.Addr())
			lock := b.newLock(key, redislock.WithoutWakeups())
			lock.SetExpire(30)
			mustAcquire(t, lock, true)
			dels := redistest.Calls(t, valkeyAdmin, "delifeq")
			mustRelease(t, lock, true)
			if n := redistest.Calls(t, valkeyAdmin, "delifeq") - dels; n != 1 {
				t.Fatalf("%d DELIFEQ on Valkey, want 1", n)
			}

			proxy.Retarget(older.Addr())
			mustAcquire(t, lock, true)
			errs, scripts := errorReplies(t, olderAdmin), scriptCalls(t, olderAdmin)
			mustRelease(t, lock, true)
			if e, s := errorReplies(t, olderAdmin)-errs, scriptCalls(t, olderAdmin)-scripts; e != 1 || s != 1 {
				t.Fatalf("first release on 7.0: %d error replies and %d scripts, want 1 (DELIFEQ unknown) and 1", e, s)
			}
			if n, err := olderAdmin.Exists(context.Background(), key).Result(); err != nil || n != 0 {
				t.Fatalf("key on 7.0 after the release: exists=%d, %v", n, err)
			}
			if got := redislock.NativeReleaseOf(b.store()); got != "script" {
				t.Fatalf("after the refusal the store releases with %s, want script", got)
			}
			mustAcquire(t, lock, true)
			errs, scripts = errorReplies(t, olderAdmin), scriptCalls(t, olderAdmin)
			mustRelease(t, lock, true)
			if e, s := errorReplies(t, olderAdmin)-errs, scriptCalls(t, olderAdmin)-scripts; e != 0 || s != 1 {
				t.Fatalf("second release on 7.0: %d error replies and %d scripts, want 0 and 1", e, s)
			}

			proxy.Retarget(valkey.Addr())
			redislock.AskNativeAgain(b.store()) // as when the recheck interval has passed
			mustAcquire(t, lock, true)
			dels = redistest.Calls(t, valkeyAdmin, "delifeq")
			mustRelease(t, lock, true)
			if n := redistest.Calls(t, valkeyAdmin, "delifeq") - dels; n != 1 {
				t.Fatalf("%d DELIFEQ back on Valkey, want 1", n)
			}
		})
	}
}

// TestNativeReleaseUnanswered: a store whose server does not answer the
// question leaves it open, and the release fails with the store's error.
func TestNativeReleaseUnanswered(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	srv.Kill()
	lock := redislock.New(client, "zerolock-test:"+t.Name(), redislock.WithoutWakeups())
	if ok, err := lock.Release(); ok || err == nil {
		t.Fatalf("Release() with the server down = %v, %v; want an error", ok, err)
	}
	if got := redislock.NativeReleaseOf(client); got != "unknown" {
		t.Fatalf("after an unanswered question the store releases with %s, want unknown", got)
	}
}

// TestNativeReleaseUnderWaiter: on Valkey 9, a waiter refused by a hold
// WithoutWakeups does not mark it (its token ends in "_"), so the release
// is still one DELIFEQ, which frees the key, and the waiter then takes it
// at its back-off; on both stores.
func TestNativeReleaseUnderWaiter(t *testing.T) {
	srv := redistest.StartFlavour(t, redistest.Valkey9)
	cacheReleaseScript(t, srv.Client(t))
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		quiet := b.newLock(key, redislock.WithoutWakeups())
		quiet.SetExpire(30)
		mustAcquire(t, quiet, true)
		waiter := b.newLock(key, redislock.WithBackoff(5*time.Millisecond, 20*time.Millisecond))
		waiter.SetExpire(30)
		got := inBackground(func() (bool, error) { return waiter.AcquireWaitCtx(context.Background(), 10*time.Second) })
		waitFlagged(t, admin, key)
		dels := redistest.Calls(t, admin, "delifeq")
		mustRelease(t, quiet, true) // DELIFEQ compares exactly: true only for an unmarked hold
		if d := redistest.Calls(t, admin, "delifeq") - dels; d != 1 {
			t.Errorf("a quiet release under a waiter sent %d DELIFEQ, want 1", d)
		}
		if err := <-got; err != nil {
			t.Fatalf("the waiter after the release: %v", err)
		}
		mustRelease(t, waiter, true)
	})
}
