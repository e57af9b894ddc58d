package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

func init() {
	childRoles["multilock"] = multiLockChild
	childRoles["multiholder"] = multiHolderChild
}

// multiLockKeys is the number of keys the multi-lock workload picks from.
const multiLockKeys = 6

// multiLockChild runs goroutines that each, with a new MultiLock on a
// random 2 or 3 of the 6 keys under PREFIX, wait for them (AcquireWaitCtx,
// 2 s), then SET NX a marker per key (one pipeline) and note a violation
// for each marker that was already set, DEL the markers they set, and
// release, until the deadline or the target count. It prints its
// acquisitions, the violations, the errors and the waits that ended
// without the keys.
func multiLockChild(client *redis.Client) int {
	goroutines, _ := strconv.Atoi(os.Getenv("GOROUTINES"))
	target, _ := strconv.ParseInt(os.Getenv("TARGET"), 10, 64)
	duration, _ := time.ParseDuration(os.Getenv("DURATION"))
	prefix := os.Getenv("PREFIX")
	deadline := time.Now().Add(duration)
	var (
		acquired, violations, errs, timeouts atomic.Int64
		wg                                   sync.WaitGroup
	)
	ctx := context.Background()
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(g)))
			for time.Now().Before(deadline) && (target == 0 || acquired.Load() < target) {
				picked := r.Perm(multiLockKeys)[:2+r.IntN(2)]
				keys, markers := make([]string, len(picked)), make([]string, len(picked))
				for i, k := range picked {
					keys[i], markers[i] = fmt.Sprintf("%s:%d", prefix, k), fmt.Sprintf("%s:owner:%d", prefix, k)
				}
				m, err := redislock.NewMultiLock(client, keys, redislock.WithExpiry(5*time.Second))
				if err != nil {
					errs.Add(1)
					return
				}
				ok, err := m.AcquireWaitCtx(ctx, 2*time.Second)
				switch {
				case err != nil:
					errs.Add(1)
					continue
				case !ok:
					timeouts.Add(1)
					continue
				}
				acquired.Add(1)
				v, e := markKeys(ctx, client, markers)
				violations.Add(v)
				errs.Add(e)
				if ok, err := m.ReleaseCtx(ctx); !ok || err != nil {
					errs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Printf("acquired %d violations %d errors %d timeouts %d\n",
		acquired.Load(), violations.Load(), errs.Load(), timeouts.Load())
	return 0
}

// markKeys is the critical section of the multi-lock workload: SET NX each
// marker (a marker already set is another holder inside: a violation), then
// DEL the markers it set. It returns the violations and the errors.
func markKeys(ctx context.Context, client *redis.Client, markers []string) (violations, errs int64) {
	sets := make([]*redis.BoolCmd, len(markers))
	_, err := client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, mk := range markers {
			sets[i] = p.SetNX(ctx, mk, 1, 10*time.Second)
		}
		return nil
	})
	if err != nil {
		return 0, 1
	}
	var mine []string
	for i, set := range sets {
		if set.Val() {
			mine = append(mine, markers[i])
		} else {
			violations++
		}
	}
	if err := client.Del(ctx, mine...).Err(); err != nil {
		errs++
	}
	return violations, errs
}

// multiLockRun is what the processes of the multi-lock workload reported.
type multiLockRun struct {
	acquired, violations, errors, timeouts int64
	took                                   time.Duration
}

// TestMultiLockAcrossProcesses: 3 OS processes x 20 goroutines each take
// a random 2 or 3 of 6 keys with a MultiLock and, inside, SET NX a Redis
// marker per key. Pass: no marker was ever found set (no key held twice),
// no call failed, and (in the long run) at least 50,000 acquisitions.
func TestMultiLockAcrossProcesses(t *testing.T) {
	srv := redistest.Start(t)
	const processes, goroutines = 3, 20
	duration, target := 3*time.Second, int64(0)
	if long() {
		duration, target = 60*time.Second, 17000 // >= 51,000 in all, bounded by a minute
	}
	prefix := "torture:" + t.Name()
	env := []string{"REDIS_ADDR=" + srv.Addr(), "PREFIX=" + prefix,
		fmt.Sprintf("GOROUTINES=%d", goroutines), "DURATION=" + duration.String(), fmt.Sprintf("TARGET=%d", target)}
	start := time.Now()
	results := make(chan multiLockRun, processes)
	for range processes {
		cmd, out, err := child("multilock", env...)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			var r multiLockRun
			for out.Scan() {
				fmt.Sscanf(out.Text(), "acquired %d violations %d errors %d timeouts %d",
					&r.acquired, &r.violations, &r.errors, &r.timeouts)
			}
			_ = cmd.Wait()
			results <- r
		}()
	}
	var total multiLockRun
	for range processes {
		r := <-results
		total.acquired += r.acquired
		total.violations += r.violations
		total.errors += r.errors
		total.timeouts += r.timeouts
	}
	total.took = time.Since(start)
	if total.violations != 0 {
		t.Errorf("%d times a key's marker was already set: a key held twice", total.violations)
	}
	if total.errors != 0 {
		t.Errorf("%d calls failed on a healthy server", total.errors)
	}
	if long() && total.acquired < processes*target {
		t.Errorf("%d acquisitions in %v; want at least %d", total.acquired, total.took.Round(time.Second), processes*target)
	}
	if total.acquired == 0 {
		t.Error("no acquisition")
	}
	record(t, fmt.Sprintf("%d processes x %d goroutines, each acquisition a MultiLock on a random 2-3 of %d keys, AcquireWait; inside, SET NX a Redis marker per key, DEL after",
		processes, goroutines, multiLockKeys),
		fmt.Sprintf("%d acquisitions in %v (%.0f/s), %d violations, %d errors, %d waits of 2 s ended without the keys",
			total.acquired, total.took.Round(100*time.Millisecond), float64(total.acquired)/total.took.Seconds(),
			total.violations, total.errors, total.timeouts))
}

// multiHolderChild takes a MultiLock on KEYS (comma-separated) for 2 s, on
// the cluster of CLUSTER_ADDRS when set, prints "held", and waits to be
// killed.
func multiHolderChild(client *redis.Client) int {
	var store redislock.Store = client
	if addrs := os.Getenv("CLUSTER_ADDRS"); addrs != "" {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ",")})
		defer cc.Close()
		store = cc
	}
	m, err := redislock.NewMultiLock(store, strings.Split(os.Getenv("KEYS"), ","),
		redislock.WithExpiry(2*time.Second), redislock.WithTolerance(0))
	if err != nil {
		fmt.Printf("failed %v\n", err)
		return 1
	}
	if ok, err := m.AcquireCtx(context.Background()); !ok || err != nil {
		fmt.Printf("failed %v %v\n", ok, err)
		return 1
	}
	fmt.Println("held")
	time.Sleep(time.Minute)
	return 0
}

// TestMultiLockHolderKilled: a child process holds a 2 s MultiLock on
// three keys (on a redis-server, and on the cluster with each key in a slot
// of its own; 5 trials of each in the long run) and is SIGKILLed. Every key expires: another process's
// MultiLock on them gets them within the longest remaining PTTL + 250 ms,
// and never before it ran out.
func TestMultiLockHolderKilled(t *testing.T) {
	srv := redistest.Start(t)
	cluster := redistest.SharedCluster(t)
	deployments := []struct {
		name  string
		env   []string
		store redislock.Store
		admin redis.Cmdable
	}{
		{"node", nil, srv.Client(t), srv.Client(t)},
		{"cluster", []string{"CLUSTER_ADDRS=" + strings.Join(cluster.Addrs(), ",")}, cluster.Client(t), cluster.Client(t)},
	}
	trials := 1
	if long() {
		trials = 5
	}
	var worst time.Duration
	for trial := range trials * len(deployments) {
		d := deployments[trial%len(deployments)]
		keys := make([]string, 3)
		for i := range keys {
			keys[i] = fmt.Sprintf("torture:%s:%s:%d:%d", t.Name(), d.name, trial, i)
		}
		if cc, ok := d.admin.(*redis.ClusterClient); ok {
			keys = slotsApart(t, cc, keys)
		}
		env := append([]string{"REDIS_ADDR=" + srv.Addr(), "KEYS=" + strings.Join(keys, ",")}, d.env...)
		cmd, out, err := child("multiholder", env...)
		if err != nil {
			t.Fatal(err)
		}
		if !out.Scan() || out.Text() != "held" {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("%s: the child did not take the keys: %q", d.name, out.Text())
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		killed := time.Now()
		var longest time.Duration
		for _, k := range keys {
			ttl := d.admin.PTTL(context.Background(), k).Val()
			if ttl <= 0 {
				t.Fatalf("%s: key %q was gone at the kill (PTTL %v)", d.name, k, ttl)
			}
			longest = max(longest, ttl)
		}
		expires := killed.Add(longest)
		m, err := redislock.NewMultiLock(d.store, keys, redislock.WithExpiry(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for {
			ok, err := m.AcquireCtx(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			if ok {
				if now.Before(expires.Add(-5 * time.Millisecond)) {
					t.Fatalf("%s: acquired %v before the dead holder's keys expired", d.name, expires.Sub(now))
				}
				worst = max(worst, now.Sub(expires))
				if now.After(expires.Add(250 * time.Millisecond)) {
					t.Fatalf("%s: acquired %v after the keys expired, more than 250ms", d.name, now.Sub(expires))
				}
				break
			}
			if now.After(expires.Add(time.Second)) {
				t.Fatalf("%s: never acquired", d.name)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if ok, err := m.ReleaseCtx(context.Background()); !ok || err != nil {
			t.Errorf("%s: Release() = %v, %v", d.name, ok, err)
		}
	}
	record(t, fmt.Sprintf("2 s MultiLock on 3 keys, SIGKILL; %d trials on a redis-server and %d on the cluster, each key in a slot of its own", trials, trials),
		fmt.Sprintf("another process acquired all the keys at most %v after the longest PTTL ran out, never before", worst.Round(time.Millisecond)))
}

// slotsApart renames keys, by suffixing them, so that each is in a Cluster
// slot of its own, as the cluster computes slots.
func slotsApart(t *testing.T, cc *redis.ClusterClient, keys []string) []string {
	t.Helper()
	seen := map[int64]bool{}
	out := make([]string, len(keys))
	for i, k := range keys {
		for n := 0; ; n++ {
			name := fmt.Sprintf("%s:%d", k, n)
			slot, err := cc.ClusterKeySlot(context.Background(), name).Result()
			if err != nil {
				t.Fatal(errors.Join(errors.New("CLUSTER KEYSLOT"), err))
			}
			if !seen[slot] {
				seen[slot], out[i] = true, name
				break
			}
		}
	}
	return out
}
