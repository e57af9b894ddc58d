package redislock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/internal/testing/floor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// BenchmarkPrimitive measures one take-and-give-back cycle of the
// semaphore, the multi-key lock (three keys in one slot) and both sides of
// the read-write lock on a real redis-server, through go-redis and
// go-zero's store, each beside its own floor (internal/testing/floor: one
// script or command to take, one to give back). Run it with -benchmem to
// see allocations per cycle; make bench reports the rates at 50 goroutines.
func BenchmarkPrimitive(b *testing.B) {
	srv := redistest.Start(b)
	client := srv.Client(b)
	zstore := redislock.GoZeroStore(zredis.MustNewRedis(zredis.RedisConf{
		Host: srv.Addr(), Type: zredis.NodeType, NonBlock: true, DisableIdentity: true,
	}))
	ctx := context.Background()
	if err := floor.Load(ctx, client); err != nil {
		b.Fatal(err)
	}
	const ttl = 5 * time.Second
	opts := []redislock.Option{redislock.WithExpiry(ttl), redislock.WithTolerance(0)}
	keys := func(name string) []string {
		return []string{"{" + name + "}:a", "{" + name + "}:b", "{" + name + "}:c"}
	}
	stores := []struct {
		name  string
		store redislock.Store
	}{{"go-redis", client}, {"go-zero", zstore}}

	type cycle struct {
		name string
		run  func(ctx context.Context) (bool, error)
	}
	var cycles []cycle
	token := "token-" + strconv.Itoa(b.N)
	cycles = append(cycles,
		cycle{"semaphore/floor", func(ctx context.Context) (bool, error) {
			return floor.SemCycle(ctx, client, "bench:sem:floor", token, 3, ttl)
		}},
		cycle{"multilock/floor", func(ctx context.Context) (bool, error) {
			return floor.MultiCycle(ctx, client, keys("bench:multi:floor"), token, ttl)
		}},
		cycle{"rwlock-read/floor", func(ctx context.Context) (bool, error) {
			return floor.ReadCycle(ctx, client, "{bench:rw:floor}", "{bench:rw:floor}:r", token, ttl)
		}},
		cycle{"rwlock-write/floor", func(ctx context.Context) (bool, error) {
			return floor.WriteCycle(ctx, client, "{bench:rw:floor}", "{bench:rw:floor}:r", token, ttl)
		}},
	)
	for _, s := range stores {
		sem, err := redislock.NewSemaphore(s.store, "bench:sem:"+s.name, 3, opts...)
		if err != nil {
			b.Fatal(err)
		}
		multi, err := redislock.NewMultiLock(s.store, keys("bench:multi:"+s.name), opts...)
		if err != nil {
			b.Fatal(err)
		}
		rw := redislock.NewRWLock(s.store, "bench:rw:"+s.name, opts...)
		cycles = append(cycles,
			cycle{"semaphore/" + s.name, takeAndGive(sem.AcquireCtx, sem.ReleaseCtx)},
			cycle{"multilock/" + s.name, takeAndGive(multi.AcquireCtx, multi.ReleaseCtx)},
			cycle{"rwlock-read/" + s.name, takeAndGive(rw.RLockCtx, rw.RUnlockCtx)},
			cycle{"rwlock-write/" + s.name, takeAndGive(rw.LockCtx, rw.UnlockCtx)},
		)
	}
	for _, c := range cycles {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if ok, err := c.run(ctx); !ok || err != nil {
					b.Fatalf("cycle = %v, %v; want true, nil", ok, err)
				}
			}
		})
	}
}

// takeAndGive is one cycle: take, and give back what was taken.
func takeAndGive(take, give func(context.Context) (bool, error)) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		ok, err := take(ctx)
		if !ok || err != nil {
			return ok, err
		}
		return give(ctx)
	}
}
