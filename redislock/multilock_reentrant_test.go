package redislock_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// errReplyLost is the error an intercept gives a command whose reply it
// dropped after Redis ran it, as a client timeout would.
var errReplyLost = errors.New("test: reply lost after the command ran")

// multiScripts names the multi-lock scripts by digest, by source and by
// code, so an intercept can tell which one a command (EVALSHA or EVAL)
// runs.
var multiScripts = sync.OnceValues(func() (map[string]string, error) {
	names := map[string]string{}
	for _, name := range []string{"acquire", "release", "renew"} {
		src, err := os.ReadFile("multilock_" + name + ".lua")
		if err != nil {
			return nil, err
		}
		sum := sha1.Sum(src)
		names[hex.EncodeToString(sum[:])] = name
		names[string(src)] = name
		code := redislock.LuaCode(string(src))
		names[code] = name // go-zero's store sends the code by EVAL,
		codeSum := sha1.Sum([]byte(code))
		names[hex.EncodeToString(codeSum[:])] = name // then by EVALSHA of its digest
	}
	return names, nil
})

// multiScript returns which multi-lock script cmd runs ("" for none) and
// its keys.
func multiScript(t *testing.T, cmd redis.Cmder) (string, []string) {
	names, err := multiScripts()
	if err != nil {
		t.Error(err)
		return "", nil
	}
	args := cmd.Args()
	if len(args) < 3 {
		return "", nil
	}
	if name := strings.ToLower(fmt.Sprint(args[0])); name != "eval" && name != "evalsha" {
		return "", nil
	}
	n, _ := args[2].(int)
	keys := make([]string, 0, n)
	for _, k := range args[3 : 3+n] {
		keys = append(keys, fmt.Sprint(k))
	}
	return names[fmt.Sprint(args[1])], keys
}

// loseNthAcquire returns ctx with an intercept that lets the acquire
// script run on Redis the nth time (from 0) and then loses its reply.
func loseNthAcquire(t *testing.T, ctx context.Context, nth int) context.Context {
	var mu sync.Mutex
	ran := 0
	return withIntercept(ctx, func(cmd redis.Cmder, send func() error) error {
		err := send()
		if name, _ := multiScript(t, cmd); name != "acquire" || err != nil {
			return err // a NOSCRIPT answer ran nothing: go-redis follows it with EVAL
		}
		mu.Lock()
		defer mu.Unlock()
		ran++
		if ran-1 != nth {
			return nil
		}
		cmd.SetErr(errReplyLost)
		return errReplyLost
	})
}

// multiDeployments are the stores the re-entrancy tests run on: both
// stores on a new redis-server (one script per acquire) and on the shared
// cluster with keys in three slots (three scripts); groups is how many
// scripts an acquire runs.
func multiDeployments(t *testing.T, f func(t *testing.T, store redislock.Store, admin redis.UniversalClient, keys []string, groups int)) {
	t.Helper()
	srv := redistest.Start(t)
	nodeAdmin := srv.Client(t)
	for name, store := range spiedNodeStores(t, srv) {
		t.Run(name, func(t *testing.T) { f(t, store, nodeAdmin, multiKeys(t, 3), 1) })
	}
	c := redistest.SharedCluster(t)
	clusterAdmin := c.Client(t)
	for name, store := range spiedClusterStores(t, c) {
		t.Run(name, func(t *testing.T) { f(t, store, clusterAdmin, crossSlotKeys(t, clusterAdmin, 3), 3) })
	}
}

// TestMultiLockFailedRefreshKeepsHold: an acquire whose script ran but
// whose reply was lost fails with the error. When the instance held the
// lock before (a re-entrant refresh), its hold survives whichever slot's
// reply was lost, as a RedisLock's does: no other lock takes the keys.
// When it held nothing before, it gives back every key it took.
func TestMultiLockFailedRefreshKeepsHold(t *testing.T) {
	multiDeployments(t, func(t *testing.T, store redislock.Store, admin redis.UniversalClient, keys []string, groups int) {
		for nth := range groups {
			m := newMulti(t, store, keys)
			mustMultiAcquire(t, m, true)
			token := mustHoldOneToken(t, admin, keys)
			ok, err := m.AcquireCtx(loseNthAcquire(t, context.Background(), nth))
			if ok || !errors.Is(err, errReplyLost) {
				t.Fatalf("re-entrant acquire, reply %d lost: AcquireCtx() = %v, %v; want false and the error", nth, ok, err)
			}
			if got := mustHoldOneToken(t, admin, keys); got != token {
				t.Fatalf("re-entrant acquire, reply %d lost: keys hold %q; want the holder's %q", nth, got, token)
			}
			mustMultiAcquire(t, newMulti(t, store, keys), false)
			mustMultiRelease(t, m, true)

			fresh := newMulti(t, store, keys)
			ok, err = fresh.AcquireCtx(loseNthAcquire(t, context.Background(), nth))
			if ok || !errors.Is(err, errReplyLost) {
				t.Fatalf("fresh acquire, reply %d lost: AcquireCtx() = %v, %v; want false and the error", nth, ok, err)
			}
			mustBeFree(t, admin, keys...)
		}
	})
}

// TestMultiLockRefusalHoldsNone: an instance whose hold was broken (one
// key expired and another client took it) is refused when it acquires
// again, and then holds none of the keys, as AcquireCtx promises: the keys
// it still held are given back, so it does not hold some keys while it
// waits for the others.
func TestMultiLockRefusalHoldsNone(t *testing.T) {
	multiDeployments(t, func(t *testing.T, store redislock.Store, admin redis.UniversalClient, keys []string, _ int) {
		ctx := context.Background()
		m := newMulti(t, store, keys)
		mustMultiAcquire(t, m, true)
		middle := redislock.MultiLockKeys(m)[1]
		if err := admin.Del(ctx, middle).Err(); err != nil {
			t.Fatal(err)
		}
		other := redislock.New(admin, middle, redislock.WithExpiry(30*time.Second))
		mustAcquire(t, other, true)
		mustMultiAcquire(t, m, false)
		for _, k := range redislock.MultiLockKeys(m) {
			if k != middle {
				mustBeFree(t, admin, k)
			}
		}
		mustRelease(t, other, true)
		mustMultiAcquire(t, m, true)
		mustMultiRelease(t, m, true)
	})
}

// TestMultiLockClusterOneInstanceConcurrent: on the real cluster, two
// goroutines share one MultiLock across two slots. The first has taken the
// first slot and is held back before the second, which another client
// holds. A second call on the same instance meanwhile, an acquire refused
// on the busy slot or a release, must not give back the first goroutine's
// fresh hold of the first slot: once the busy key is freed, the first
// goroutine's acquire returns true and the instance holds both keys. (The
// instance serialises its tries and releases: the second call waits for
// the first, here until its own deadline ends it.)
func TestMultiLockClusterOneInstanceConcurrent(t *testing.T) {
	c := redistest.SharedCluster(t)
	admin := c.Client(t)
	for name, store := range spiedClusterStores(t, c) {
		t.Run(name, func(t *testing.T) {
			for _, second := range []string{"acquire", "release"} {
				t.Run(second, func(t *testing.T) { oneInstanceConcurrent(t, store, admin, second) })
			}
		})
	}
}

// oneInstanceConcurrent is one case of TestMultiLockClusterOneInstanceConcurrent:
// second names the call made meanwhile.
func oneInstanceConcurrent(t *testing.T, store redislock.Store, admin *redis.ClusterClient, second string) {
	keys := redislock.MultiLockKeys(newMulti(t, store, crossSlotKeys(t, admin, 2)))
	busy := redislock.New(admin, keys[1], redislock.WithExpiry(30*time.Second))
	mustAcquire(t, busy, true)
	m := newMulti(t, store, keys)

	atSecond, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	first := withIntercept(context.Background(), func(cmd redis.Cmder, send func() error) error {
		if name, ks := multiScript(t, cmd); name == "acquire" && len(ks) == 1 && ks[0] == keys[1] {
			once.Do(func() { close(atSecond) })
			<-resume
		}
		return send()
	})
	type result struct {
		ok  bool
		err error
	}
	done := make(chan result, 1)
	go func() {
		ok, err := m.AcquireCtx(first)
		done <- result{ok, err}
	}()
	select {
	case <-atSecond:
	case r := <-done:
		t.Fatalf("%s: the first acquire returned %v, %v before reaching the second slot", second, r.ok, r.err)
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the first acquire did not reach the second slot", second)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	var (
		ok  bool
		err error
	)
	if second == "acquire" {
		ok, err = m.AcquireCtx(ctx)
	} else {
		ok, err = m.ReleaseCtx(ctx)
	}
	cancel()
	t.Logf("%s meanwhile on the same instance: %v, %v", second, ok, err)

	mustRelease(t, busy, true)
	close(resume)
	r := <-done
	if !r.ok || r.err != nil {
		t.Fatalf("%s meanwhile: the first acquire = %v, %v; want true, nil", second, r.ok, r.err)
	}
	mustHoldOneToken(t, admin, keys)
	mustMultiRelease(t, m, true)
}

// TestMultiLockClusterFailedRefreshGivesBackOnlyFresh: across slots, a
// hold that lost one key of its first slot (two keys under one hash tag)
// is acquired again: the first slot's script takes the lost key fresh and
// refreshes the other, and the second slot's reply is lost. The acquire
// fails with the error and gives back the one key it took fresh; the keys
// the instance held before, in every slot, keep its token.
func TestMultiLockClusterFailedRefreshGivesBackOnlyFresh(t *testing.T) {
	c := redistest.SharedCluster(t)
	admin := c.Client(t)
	ctx := context.Background()
	for name, store := range spiedClusterStores(t, c) {
		t.Run(name, func(t *testing.T) {
			others := crossSlotKeys(t, admin, 2)
			lowest := min(clusterSlot(t, admin, others[0]), clusterSlot(t, admin, others[1]))
			var tag string
			for i := 0; tag == "" || clusterSlot(t, admin, tag) >= lowest; i++ {
				tag = fmt.Sprintf("{zerolock-test:%s:%d}", t.Name(), i)
			}
			lost, kept := tag+":a", tag+":b"
			keys := append(others, lost, kept)
			m := newMulti(t, store, keys)
			if first := redislock.MultiLockKeys(m)[:2]; !slices.Contains(first, lost) || !slices.Contains(first, kept) {
				t.Fatalf("keys in the order taken %q: want the hash tag's first", redislock.MultiLockKeys(m))
			}
			mustMultiAcquire(t, m, true)
			token := mustHoldOneToken(t, admin, keys)
			if err := admin.Del(ctx, lost).Err(); err != nil {
				t.Fatal(err)
			}
			ok, err := m.AcquireCtx(loseNthAcquire(t, ctx, 1))
			if ok || !errors.Is(err, errReplyLost) {
				t.Fatalf("AcquireCtx() = %v, %v; want false and the error", ok, err)
			}
			mustBeFree(t, admin, lost)
			held := append(slices.Clone(others), kept)
			if got := mustHoldOneToken(t, admin, held); got != token {
				t.Fatalf("keys %q hold %q; want the holder's %q", held, got, token)
			}
			mustMultiRelease(t, m, false)
			mustBeFree(t, admin, keys...)
		})
	}
}

// clusterSlot is key's hash slot, as the cluster computes it.
func clusterSlot(t *testing.T, admin *redis.ClusterClient, key string) int64 {
	t.Helper()
	slot, err := admin.ClusterKeySlot(context.Background(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return slot
}
