package torture

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/internal/testing/faultproxy"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// lockInput is one call in the history: client acquiring (again, when it
// holds the lock already) or releasing key. resends marks a client whose
// library resends a command after a lost reply and that the lock cannot
// tell not to (go-zero's store).
type lockInput struct {
	client, key int
	release     bool
	resends     bool
}

// lockOutput is what the call returned; unknown means it failed, so it may
// or may not have taken effect.
type lockOutput struct {
	ok, unknown bool
}

// mutexModel is a lock per key, held by at most one client (-1: free).
var mutexModel = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[int][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(lockInput).key
			byKey[k] = append(byKey[k], op)
		}
		parts := make([][]porcupine.Operation, 0, len(byKey))
		for _, ops := range byKey {
			parts = append(parts, ops)
		}
		return parts
	},
	Init: func() []any { return []any{-1} },
	Step: func(state, input, output any) []any {
		return mutexStep(state.(int), input.(lockInput), output.(lockOutput))
	},
	Equal: func(a, b any) bool { return a == b },
	DescribeOperation: func(input, output any) string {
		in, out := input.(lockInput), output.(lockOutput)
		op := "acquire"
		if in.release {
			op = "release"
		}
		switch {
		case out.unknown:
			return fmt.Sprintf("c%d %s k%d -> ?", in.client, op, in.key)
		default:
			return fmt.Sprintf("c%d %s k%d -> %v", in.client, op, in.key, out.ok)
		}
	},
	DescribeState: func(state any) string {
		if h := state.(int); h >= 0 {
			return fmt.Sprintf("held by c%d", h)
		}
		return "free"
	},
}

// mutexStep is the transition: the states the lock may be in after the
// call, none when its answer is impossible. Acquire succeeds when the lock
// is free or already the caller's (re-entrant: the expiry is refreshed)
// and fails only while another client holds it. Release succeeds only for
// the holder and fails only for others, except on a store that resends
// after a lost reply (go-zero's), where a release that happened may answer
// false, as ReleaseCtx documents: whatever it answers, the caller does not
// hold the lock afterwards.
func mutexStep(holder int, in lockInput, out lockOutput) []any {
	mine, free := holder == in.client, holder == -1
	switch {
	case !in.release && out.unknown:
		if free || mine {
			return []any{holder, in.client}
		}
		return []any{holder}
	case !in.release && out.ok:
		if free || mine {
			return []any{in.client}
		}
	case !in.release:
		if !free && !mine {
			return []any{holder}
		}
	case out.unknown && mine:
		return []any{holder, -1}
	case out.ok:
		if mine {
			return []any{-1}
		}
	case !mine:
		return []any{holder}
	case in.resends:
		return []any{-1}
	}
	return nil
}

// TestLinearizable records acquire, re-entrant acquire and release calls
// by 20 clients on 3 keys, half with a go-redis client each and half on
// go-zero's store (both with go-redis's default retries), behind a proxy that delays traffic by 0-3 ms and cuts every
// connection with a TCP reset at random intervals, and checks the history
// against mutexModel with porcupine. A call that failed is recorded with an
// unknown outcome, open until a settler pause proves its command can no
// longer run (see settler); left open to the end of the history instead,
// the outcomes make the check's search explode now and then. The expiry
// (1 min) outlives the run, so the model needs no clock.
func TestLinearizable(t *testing.T) {
	srv := redistest.Start(t)
	proxy := faultproxy.Start(t, srv.Addr())
	const clients, keys = 20, 3
	gozero := redislock.GoZeroStore(zredis.MustNewRedis(zredis.RedisConf{
		Host: proxy.Addr(), Type: zredis.NodeType, NonBlock: true, DisableIdentity: true,
	}))
	duration := 3 * time.Second
	if long() {
		duration = 30 * time.Second
	}

	var (
		mu      sync.Mutex
		history []porcupine.Operation
		open    []int // the unknown outcomes not settled yet
		resets  atomic.Int64
		settles int
		gate    sync.RWMutex // a call holds it shared; settling, exclusively
	)
	epoch := time.Now()
	now := func() int64 { return int64(time.Since(epoch)) }
	ctx, stop := context.WithTimeout(context.Background(), duration)
	defer stop()

	settler := newSettler(t, srv.Addr(), proxy)
	settle := func() {
		gate.Lock()
		defer gate.Unlock()
		if err := settler.settle(); err != nil {
			t.Errorf("settling unknown outcomes: %v", err) // they stay open
			return
		}
		at := now()
		mu.Lock()
		for _, i := range open {
			history[i].Return = at
		}
		open = open[:0]
		mu.Unlock()
		settles++
	}

	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the faults, and every 4th time the settling of unknowns
		defer wg.Done()
		for ctx.Err() == nil {
			proxy.SetLatency(time.Duration(rand.IntN(3000)) * time.Microsecond)
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(50+rand.IntN(200)) * time.Millisecond):
				proxy.Reset()
				if resets.Add(1)%4 == 0 {
					settle()
				}
			}
		}
		proxy.SetLatency(0)
	}()
	for c := 0; c < clients; c++ {
		// Even clients have a go-redis client of their own; odd ones share
		// go-zero's store (go-zero keeps one client per address).
		var store redislock.Store = gozero
		if c%2 == 0 {
			rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr(), PoolSize: 2})
			t.Cleanup(func() { _ = rdb.Close() })
			store = rdb
		}
		locks := make([]*redislock.RedisLock, keys)
		for k := range locks {
			locks[k] = redislock.New(store, fmt.Sprintf("torture:linear:%d", k), redislock.WithExpiry(time.Minute))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			maybeHeld := make([]bool, keys)
			for ctx.Err() == nil {
				k := rand.IntN(keys)
				in := lockInput{client: c, key: k, release: maybeHeld[k] && rand.IntN(3) > 0, resends: c%2 == 1}
				gate.RLock()
				call := now()
				var (
					ok  bool
					err error
				)
				// The calls outlive the run's context: a call cut short by
				// its end would be an unknown outcome for no fault.
				if in.release {
					ok, err = locks[k].ReleaseCtx(context.Background())
				} else {
					ok, err = locks[k].AcquireCtx(context.Background())
				}
				ret := now()
				out := lockOutput{ok: ok, unknown: err != nil}
				switch {
				case out.unknown:
					ret = -1 // settled later: it may take effect until then
					maybeHeld[k] = true
				case in.release:
					maybeHeld[k] = false
				case ok:
					maybeHeld[k] = true
				}
				mu.Lock()
				if out.unknown {
					open = append(open, len(history))
				}
				history = append(history, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
				gate.RUnlock()
			}
		}()
	}
	wg.Wait()
	settle()

	end := now() + 1
	var unknown, acquired int
	for i := range history {
		if history[i].Return < 0 { // not settled: open to the end
			history[i].Return = end
		}
		if history[i].Output.(lockOutput).unknown {
			unknown++
		}
		if in, out := history[i].Input.(lockInput), history[i].Output.(lockOutput); !in.release && out.ok {
			acquired++
		}
	}
	res, info := porcupine.CheckOperationsVerbose(mutexModel.ToModel(), history, time.Minute)
	if res == porcupine.Unknown {
		// The checker ran out of time, which a machine busy with other test
		// binaries causes; it found nothing illegal. One longer try decides;
		// Unknown again still fails the test.
		t.Logf("porcupine: Unknown within a minute on %d operations; checking again for up to 4 minutes", len(history))
		res, info = porcupine.CheckOperationsVerbose(mutexModel.ToModel(), history, 4*time.Minute)
	}
	if res != porcupine.Ok {
		path := filepath.Join(os.TempDir(), "zerolock-linearizability.html")
		if err := porcupine.VisualizePath(mutexModel.ToModel(), info, path); err != nil {
			t.Logf("visualization: %v", err)
		}
		t.Errorf("history of %d operations is %s; visualization in %s", len(history), res, path)
	}
	if acquired == 0 || resets.Load() == 0 {
		t.Errorf("the run proves nothing: %d acquisitions, %d resets", acquired, resets.Load())
	}
	record(t, fmt.Sprintf("%d clients x %d keys, %s, proxy latency 0-3 ms and TCP resets every 50-250 ms, go-redis and go-zero stores with default retries", clients, keys, duration),
		fmt.Sprintf("%d operations (%d successful acquires), %d resets, %d unknown outcomes settled in %d pauses; porcupine: %s", len(history), acquired, resets.Load(), unknown, settles, res))
}
