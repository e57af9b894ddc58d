package redislock_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
	"github.com/zerolock/zerolock/redislock/internal/gozero"
	"github.com/zerolock/zerolock/redislock/internal/script"
)

// scriptStats are a server's EVAL, EVALSHA and SCRIPT LOAD calls and
// NOSCRIPT replies so far (INFO commandstats and errorstats).
type scriptStats struct{ eval, evalsha, load, noscript int64 }

func scriptStatsOf(t *testing.T, c *redis.Client) scriptStats {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats", "errorstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var s scriptStats
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		field := "calls="
		if name == "errorstat_NOSCRIPT" {
			field = "count="
		}
		var n int64
		for _, f := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(f, field); ok {
				n, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		switch name {
		case "cmdstat_eval":
			s.eval = n
		case "cmdstat_evalsha":
			s.evalsha = n
		case "cmdstat_script|load":
			s.load = n
		case "errorstat_NOSCRIPT":
			s.noscript = n
		}
	}
	return s
}

// cycleConcurrently runs 50 goroutines × 20 cycles of a new drop-in lock
// each (SET NX PX, release.lua) on keys of prefix, failing on any error:
// an open go-zero breaker fails them all.
func cycleConcurrently(t *testing.T, store *zredis.Redis, prefix string) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for g := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				l := redislock.NewRedisLock(store, fmt.Sprintf("%s:%d:%d", prefix, g, i))
				l.SetExpire(30)
				if ok, err := l.AcquireCtx(ctx); !ok || err != nil {
					errs <- fmt.Errorf("acquire: %v, %v", ok, err)
					return
				}
				if ok, err := l.ReleaseCtx(ctx); !ok || err != nil {
					errs <- fmt.Errorf("release: %v, %v", ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestGoZeroScriptCache: on go-zero's store a script runs by EVAL only
// until the server holds it, then by EVALSHA (the server no longer reads
// and hashes the code on every call). 50 goroutines' first calls on a
// fresh server get no NOSCRIPT (which go-zero's breaker counts: 50 at once
// open it, as they do for go-zero's PeriodLimit); after SCRIPT FLUSH the
// calls in flight get one NOSCRIPT each at most, are answered by EVAL at
// once, and every cycle still succeeds.
func TestGoZeroScriptCache(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	store := zredis.MustNewRedis(zredis.RedisConf{Host: srv.Addr(), Type: zredis.NodeType, NonBlock: true, DisableIdentity: true})

	cycleConcurrently(t, store, "scriptcache:fresh")
	s := scriptStatsOf(t, admin)
	if s.noscript != 0 {
		t.Fatalf("%d NOSCRIPT replies on a fresh server, want none", s.noscript)
	}
	if s.evalsha < 800 || s.eval > 200 {
		t.Fatalf("1000 releases: %d by EVALSHA, %d by EVAL; want EVAL only until the server holds the script", s.evalsha, s.eval)
	}
	// Loaded by SCRIPT LOAD (Redis 7.4 evicts what EVAL alone cached),
	// once per script: release.lua here.
	if s.load != 1 {
		t.Fatalf("SCRIPT LOAD sent %d times, want once", s.load)
	}

	if err := admin.ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	cycleConcurrently(t, store, "scriptcache:flushed")
	after := scriptStatsOf(t, admin)
	if n := after.noscript; n == 0 || n > 50 {
		t.Fatalf("%d NOSCRIPT replies after SCRIPT FLUSH, want 1 to 50 (one per call in flight at most)", n)
	}
	if d := after.evalsha - s.evalsha; d < 800 {
		t.Fatalf("after the flush, %d releases by EVALSHA of 1000: the store did not go back to it", d)
	}
}

// TestGoZeroClusterScriptCache: on go-zero's cluster store, an EVAL that
// succeeded is followed by SCRIPT LOAD on every node before EVALSHA is
// used, so keys on every node get no NOSCRIPT.
func TestGoZeroClusterScriptCache(t *testing.T) {
	c := redistest.SharedCluster(t)
	var nodes []*redis.Client
	for _, addr := range c.Addrs() {
		n := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = n.Close() })
		if err := n.ScriptFlush(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	before := make([]scriptStats, len(nodes))
	for i, n := range nodes {
		before[i] = scriptStatsOf(t, n)
	}
	store := zredis.MustNewRedis(zredis.RedisConf{Host: strings.Join(c.Addrs(), ","), Type: zredis.ClusterType,
		NonBlock: true, DisableIdentity: true})
	cycleConcurrently(t, store, "scriptcache:cluster")
	var evalsha int64
	for i, n := range nodes {
		s := scriptStatsOf(t, n)
		if d := s.noscript - before[i].noscript; d != 0 {
			t.Errorf("node %s: %d NOSCRIPT replies, want none", c.Addrs()[i], d)
		}
		evalsha += s.evalsha - before[i].evalsha
	}
	// The first calls go by EVAL while SCRIPT LOAD reaches the six nodes.
	if evalsha < 700 {
		t.Fatalf("1000 releases over the cluster: %d by EVALSHA, want EVAL only until every node holds the script", evalsha)
	}
}

// TestGoZeroScriptCacheRefusals: a store whose user may not send EVALSHA
// (a proxy or an ACL that takes EVAL only) goes back to EVAL for good
// after one refusal, every cycle succeeding; one that may not SCRIPT LOAD
// keeps to EVAL, trying SCRIPT LOAD again only after a pause, not on every
// call.
func TestGoZeroScriptCacheRefusals(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	ctx := context.Background()
	for _, tc := range []struct {
		user, rule string
		check      func(t *testing.T, s scriptStats)
	}{
		{"noevalsha", "-evalsha", func(t *testing.T, s scriptStats) {
			// At most one refused EVALSHA per call in flight.
			if s.evalsha > 50 || s.eval < 950 {
				t.Errorf("EVALSHA refused: %d EVALSHA, %d EVAL; want at most one EVALSHA per goroutine, then EVAL", s.evalsha, s.eval)
			}
		}},
		{"noload", "-script|load", func(t *testing.T, s scriptStats) {
			if s.load > 1 || s.evalsha != 0 || s.eval < 1000 {
				t.Errorf("SCRIPT LOAD refused: %d SCRIPT LOAD, %d EVALSHA, %d EVAL; want one SCRIPT LOAD, then EVAL", s.load, s.evalsha, s.eval)
			}
		}},
	} {
		t.Run(tc.user, func(t *testing.T) {
			if err := admin.Do(ctx, "ACL", "SETUSER", tc.user, "on", ">pw", "~*", "&*", "+@all", tc.rule).Err(); err != nil {
				t.Fatal(err)
			}
			if err := admin.ConfigResetStat(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			store := zredis.MustNewRedis(zredis.RedisConf{Host: srv.Addr(), Type: zredis.NodeType, User: tc.user, Pass: "pw",
				NonBlock: true, DisableIdentity: true})
			cycleConcurrently(t, store, "scriptcache:"+tc.user)
			tc.check(t, scriptStatsOf(t, admin))
		})
	}
}

// TestGoZeroScriptAnswerAllocates: a script answered by EVALSHA on
// go-zero's store allocates no more than sending its command: the tests
// for NOSCRIPT and a refused EVALSHA run on an error only (each allocated
// even for none, two allocations on every release of the drop-in).
func TestGoZeroScriptAnswerAllocates(t *testing.T) {
	z := zredis.New("127.0.0.1:5", zredis.WithHook(goZeroAnswerHook{})) // nothing listens: the hook answers
	st := redislock.GoZeroStore(z).(*gozero.Store)
	sc := script.All()[0]
	ctx := context.Background()
	keys, args := []string{"k"}, []any{"v"}
	if _, err := st.EvalScript(ctx, sc, keys, args); err != nil { // EVAL, then SCRIPT LOAD
		t.Fatal(err)
	}
	eval := testing.AllocsPerRun(200, func() { _, _ = st.EvalScript(ctx, sc, keys, args) })
	send := testing.AllocsPerRun(200, func() { _, _ = st.Do(ctx, sc.EvalShaArgs(keys, args...)) })
	if eval > send {
		t.Errorf("EvalScript answered by EVALSHA: %v allocations, sending the EVALSHA alone %v", eval, send)
	}
}
