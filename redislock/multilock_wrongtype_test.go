package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// mustBeNotLockKey fails unless err is ErrNotLockKey naming key, Redis's
// WRONGTYPE and the type the key holds.
func mustBeNotLockKey(t *testing.T, call string, err error, key, kind string) {
	t.Helper()
	if !errors.Is(err, redislock.ErrNotLockKey) {
		t.Fatalf("%s with %q holding a %s = %v; want ErrNotLockKey", call, key, kind, err)
	}
	for _, want := range []string{"WRONGTYPE", key, kind} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %q does not name %q", call, err, want)
		}
	}
}

// mustBeHash fails unless key still holds the hash the test wrote.
func mustBeHash(t *testing.T, admin redis.Cmdable, key string) {
	t.Helper()
	if kind := admin.Type(context.Background(), key).Val(); kind != "hash" {
		t.Fatalf("key %q is a %q; want the hash left alone", key, kind)
	}
}

// TestMultiLockWrongType: when one of a multi-lock's keys holds something
// other than a lock (here a hash, as a read-write lock's key does), on a
// node and across Cluster slots, on both stores:
//   - AcquireCtx and AcquireWaitCtx fail at once with ErrNotLockKey naming
//     the key and its type, and take nothing;
//   - ReleaseCtx frees every key that holds the lock's token and then
//     reports ErrNotLockKey for the other (no partial write followed by a
//     Redis error);
//   - RefreshCtx of a hold whose key was replaced reports the hold lost.
//
// The hash itself is never touched.
func TestMultiLockWrongType(t *testing.T) {
	multiDeployments(t, func(t *testing.T, store redislock.Store, admin redis.UniversalClient, keys []string, _ int) {
		ctx := context.Background()
		m := newMulti(t, store, keys)
		wrong := redislock.MultiLockKeys(m)[1]
		others := []string{redislock.MultiLockKeys(m)[0], redislock.MultiLockKeys(m)[2]}
		if err := admin.HSet(ctx, wrong, "writer", "x").Err(); err != nil {
			t.Fatal(err)
		}
		_, err := m.AcquireCtx(ctx)
		mustBeNotLockKey(t, "AcquireCtx", err, wrong, "hash")
		_, err = m.AcquireWaitCtx(ctx, time.Minute)
		mustBeNotLockKey(t, "AcquireWaitCtx", err, wrong, "hash")
		mustBeFree(t, admin, others...)
		_, err = m.ReleaseCtx(ctx)
		mustBeNotLockKey(t, "ReleaseCtx", err, wrong, "hash")
		mustBeHash(t, admin, wrong)

		// A hold whose middle key is replaced by a hash.
		if err := admin.Del(ctx, wrong).Err(); err != nil {
			t.Fatal(err)
		}
		mustMultiAcquire(t, m, true)
		mustHoldOneToken(t, admin, keys)
		if err := admin.Del(ctx, wrong).Err(); err != nil {
			t.Fatal(err)
		}
		if err := admin.HSet(ctx, wrong, "writer", "x").Err(); err != nil {
			t.Fatal(err)
		}
		if ok, err := m.RefreshCtx(ctx); ok || err != nil {
			t.Fatalf("RefreshCtx with %q replaced by a hash = %v, %v; want false, nil (lost)", wrong, ok, err)
		}
		ok, err := m.ReleaseCtx(ctx)
		if ok {
			t.Errorf("ReleaseCtx with %q replaced by a hash reported every key held", wrong)
		}
		mustBeNotLockKey(t, "ReleaseCtx", err, wrong, "hash")
		mustBeFree(t, admin, others...)
		mustBeHash(t, admin, wrong)
		if err := admin.Del(ctx, wrong).Err(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestMultiLockWrongTypeKeepsGoZeroBreakerClosed: a hundred and fifty
// calls of a multi-lock one of whose keys is a hash, through go-zero's
// store, leave go-zero's circuit breaker closed: the server answered no
// WRONGTYPE error (INFO errorstats counts none), and RedisLocks on the same store
// then acquire and release without an error. A WRONGTYPE error reply per
// call would open the breaker, which counts every error reply, for the
// whole store.
func TestMultiLockWrongTypeKeepsGoZeroBreakerClosed(t *testing.T) {
	srv := redistest.Start(t) // a breaker of its own: go-zero names it by address
	admin := srv.Client(t)
	ctx := context.Background()
	zstore := newGoZeroStore(t, srv)
	keys := multiKeys(t, 2)
	if err := admin.HSet(ctx, keys[1], "writer", "x").Err(); err != nil {
		t.Fatal(err)
	}
	m := newMulti(t, redislock.GoZeroStore(zstore), keys)
	var unexpected []error // reported after the breaker is checked
	for range 50 {
		for name, call := range map[string]func() error{
			"AcquireCtx": func() error { _, err := m.AcquireCtx(ctx); return err },
			"ReleaseCtx": func() error { _, err := m.ReleaseCtx(ctx); return err },
			"RefreshCtx": func() error {
				if ok, err := m.RefreshCtx(ctx); ok || err != nil {
					return errors.Join(err, errors.New("refreshed a lock it does not hold"))
				}
				return redislock.ErrNotLockKey
			},
		} {
			if err := call(); !errors.Is(err, redislock.ErrNotLockKey) && len(unexpected) < 3 {
				unexpected = append(unexpected, fmt.Errorf("%s = %w; want ErrNotLockKey", name, err))
			}
		}
	}
	t.Cleanup(func() {
		for _, err := range unexpected {
			t.Error(err)
		}
	})
	stats, err := admin.Info(ctx, "errorstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stats, "WRONGTYPE") { // go-redis's CLIENT SETINFO, on connecting, counts as ERR
		t.Errorf("the server answered WRONGTYPE, which go-zero's breaker counts:\n%s", stats)
	}
	for i := range 20 {
		lock := redislock.NewRedisLock(zstore, keys[0])
		if ok, err := lock.AcquireCtx(ctx); !ok || err != nil {
			t.Fatalf("RedisLock acquire %d after the calls = %v, %v; want true, nil", i, ok, err)
		}
		if ok, err := lock.ReleaseCtx(ctx); !ok || err != nil {
			t.Fatalf("RedisLock release %d after the calls = %v, %v; want true, nil", i, ok, err)
		}
	}
}
