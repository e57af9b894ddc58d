package redislock_test

// The README's lock snippets ("The lock in code", the go-redis form and
// "Waiting, watchdog, fencing") are lines of this file: the root package's
// TestReadmeGoBlocks fails when a README line is found in no compiled
// source it lists, this file among them.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/redislock"
)

// ServiceContext stands for a goctl service's svc.ServiceContext.
type ServiceContext struct {
	Redis *zredis.Redis
}

// errBusy is what deductStock returns when another holder has the item.
var errBusy = errors.New("item busy: another deduction is running")

// deductStock is a logic method of a goctl service: it takes sku's lock
// once, without waiting, and decrements the stock under it.
func deductStock(ctx context.Context, svcCtx *ServiceContext, sku string) error {
	lock := redislock.NewRedisLock(svcCtx.Redis, "stock:"+sku) // go-zero's *redis.Redis
	lock.SetExpire(5)                                          // seconds; PX sent = 5000 + 500 ms tolerance
	ok, err := lock.AcquireCtx(ctx)
	if err != nil {
		return err // Redis failed: errors.Is(err, ctx.Err()) holds if the context ended
	}
	if !ok {
		return errBusy // held by somebody else: (false, nil), not an error
	}
	defer lock.ReleaseCtx(context.WithoutCancel(ctx)) // only this holder's token deletes the key

	left, err := svcCtx.Redis.DecrCtx(ctx, "stock:count:"+sku)
	if err != nil {
		return err
	}
	fmt.Println("stock left:", left)
	return nil
}

// The lock in business logic: one try, busy is (false, nil).
func ExampleRedisLock_AcquireCtx() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	// miniredis rejects CLIENT SETINFO: zredis.WithIdentity() turns it off,
	// as DisableIdentity: true does in a RedisConf.
	svcCtx := &ServiceContext{Redis: zredis.New(mr.Addr(), zredis.WithIdentity())}
	_ = mr.Set("stock:count:sku-1", "100")
	ctx := context.Background()

	other := redislock.NewRedisLock(svcCtx.Redis, "stock:sku-1") // a deduction under way
	other.Acquire()
	fmt.Println(deductStock(ctx, svcCtx, "sku-1"))
	other.Release()
	fmt.Println(deductStock(ctx, svcCtx, "sku-1"))
	// Output:
	// item busy: another deduction is running
	// stock left: 99
	// <nil>
}

// The TTL of a lock on a go-redis client: the expiry plus the tolerance,
// as Redis counts it down.
func ExampleRedisLock_TTL() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	lock := redislock.New(rdb, "report:2026-11",
		redislock.WithExpiry(1500*time.Millisecond), redislock.WithTolerance(100*time.Millisecond))
	if ok, err := lock.AcquireCtx(ctx); err != nil || !ok {
		fmt.Println("not acquired:", ok, err)
		return
	}
	defer lock.ReleaseCtx(context.WithoutCancel(ctx))
	ttl, err := lock.TTL(ctx) // remaining time of the key as Redis sees it
	fmt.Println(ttl, err)
	// Output:
	// 1.6s <nil>
}

// execer is the method of *sql.DB that rebuildReport uses.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

var _ execer = (*sql.DB)(nil)

// rebuildReport waits up to 10 s for the report's lock, keeps it alive
// while it works, and writes with the lock's fencing token.
func rebuildReport(ctx context.Context, store *zredis.Redis, db execer, id, body string) error {
	lock := redislock.NewRedisLock(store, "report:"+id, redislock.WithFencing(), redislock.WithExpiry(2*time.Second))
	ok, err := lock.AcquireWaitCtx(ctx, 10*time.Second) // wakes when the holder releases; (false, nil) after 10 s
	if err != nil {
		return err
	}
	if !ok {
		return errBusy // still held after 10 s
	}
	defer lock.ReleaseCtx(context.WithoutCancel(ctx))
	lockCtx := lock.Watch(ctx) // renews every (2 s + 500 ms tolerance)/3; cancelled if the lock is lost
	_, err = db.ExecContext(lockCtx, "UPDATE reports SET body = ?, fence = ? WHERE id = ? AND fence <= ?",
		body, lock.Fence(), id, lock.Fence()) // storage refuses writes from an older holder
	return err
}

// reportsDB stands in for a database holding the reports table: its
// ExecContext runs rebuildReport's UPDATE, refusing an older fence.
type reportsDB struct {
	fences map[string]int64
}

func (db *reportsDB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	body, fence, id := args[0].(string), args[1].(int64), args[2].(string)
	if fence < db.fences[id] {
		fmt.Printf("report %s: fence %d refused, the row has %d\n", id, fence, db.fences[id])
		return driver.RowsAffected(0), nil
	}
	db.fences[id] = fence
	fmt.Printf("report %s: %q written with fence %d\n", id, body, fence)
	return driver.RowsAffected(1), nil
}

// Waiting, the watchdog and fencing together: each rebuild's token is
// greater than the one before, so storage can refuse a writer that lost
// its lock without knowing it.
func ExampleRedisLock_AcquireWaitCtx() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	store := zredis.New(mr.Addr(), zredis.WithIdentity())
	db := &reportsDB{fences: map[string]int64{}}
	ctx := context.Background()

	fmt.Println(rebuildReport(ctx, store, db, "q3", "first"))
	fmt.Println(rebuildReport(ctx, store, db, "q3", "second"))
	db.ExecContext(ctx, "", "stale", int64(1), "q3", int64(1)) // a holder that lost its lock
	// Output:
	// report q3: "first" written with fence 1
	// <nil>
	// report q3: "second" written with fence 2
	// <nil>
	// report q3: fence 1 refused, the row has 2
}

// A watched lock that is lost (here its key is deleted, as when it
// expired during a pause and another holder took it) cancels the
// watchdog's context with zerolock.ErrLockLost as the cause.
func ExampleRedisLock_Watch() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	store := zredis.New(mr.Addr(), zredis.WithIdentity())
	ctx := context.Background()

	lock := redislock.NewRedisLock(store, "report:q4", redislock.WithExpiry(2*time.Second))
	if ok, err := lock.AcquireCtx(ctx); err != nil || !ok {
		fmt.Println("not acquired:", ok, err)
		return
	}
	defer lock.ReleaseCtx(context.WithoutCancel(ctx))
	lockCtx := lock.Watch(ctx, zerolock.RenewEvery(10*time.Millisecond), zerolock.MaxHold(time.Minute))

	mr.Del("report:q4")
	<-lockCtx.Done()
	fmt.Println(errors.Is(context.Cause(lockCtx), zerolock.ErrLockLost))
	// Output:
	// true
}

// The README's sections on the other primitives are lines of the
// functions below.

// errTooMany is what startExport returns when the user's exports are all
// running.
var errTooMany = errors.New("two exports are already running, retry later")

// startExport runs an export when fewer than two of the user's exports
// run: a semaphore of two permits on the user's key.
func startExport(ctx context.Context, svcCtx *ServiceContext, userID string, export func(context.Context) error) error {
	// Each permit expires on its own: a crashed export frees only its own.
	sem, err := redislock.NewSemaphore(redislock.GoZeroStore(svcCtx.Redis), "export:"+userID, 2,
		redislock.WithExpiry(time.Minute))
	if err != nil {
		return err // permits < 1: redislock.ErrInvalidPermits
	}
	ok, err := sem.AcquireCtx(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return errTooMany // sem.TTL(ctx) tells when the next permit expires
	}
	defer sem.ReleaseCtx(context.WithoutCancel(ctx)) // frees this permit only, and wakes one waiter
	return export(sem.Watch(ctx))                    // renews the permit while the export runs
}

// placeOrder deducts the stock of every SKU of an order under one
// multi-lock: all the SKUs or none.
func placeOrder(ctx context.Context, svcCtx *ServiceContext, skus []string) error {
	keys := make([]string, len(skus))
	for i, sku := range skus {
		keys[i] = "stock:" + sku // the keys deductStock locks one at a time
	}
	lock, err := redislock.NewMultiLock(redislock.GoZeroStore(svcCtx.Redis), keys, redislock.WithExpiry(5*time.Second))
	if err != nil {
		return err // redislock.ErrInvalidKeys: no keys, or a key twice
	}
	ok, err := lock.AcquireWaitCtx(ctx, 2*time.Second) // holds none of the keys while it waits
	if err != nil {
		return err
	}
	if !ok {
		return errBusy
	}
	defer lock.ReleaseCtx(context.WithoutCancel(ctx))
	for _, sku := range skus {
		if _, err := svcCtx.Redis.DecrCtx(ctx, "stock:count:"+sku); err != nil {
			return err
		}
	}
	return nil
}

// readPrices reads the price table while no rebuild runs; readers share.
func readPrices(ctx context.Context, svcCtx *ServiceContext) (int64, error) {
	rw := redislock.NewRWLock(redislock.GoZeroStore(svcCtx.Redis), "prices", redislock.WithExpiry(10*time.Second), redislock.WithFencing())
	ok, err := rw.RLockWaitCtx(ctx, time.Second) // refused while a writer holds or waits
	if err != nil || !ok {
		return 0, errors.Join(errBusy, err)
	}
	defer rw.RUnlockCtx(context.WithoutCancel(ctx))
	version := rw.Fence() // WithFencing: the token of the latest rebuild this read sees
	return version, nil
}

// rebuildPrices rebuilds the table alone: it waits for the readers to
// leave, and new readers wait for it.
func rebuildPrices(ctx context.Context, svcCtx *ServiceContext) (int64, error) {
	rw := redislock.NewRWLock(redislock.GoZeroStore(svcCtx.Redis), "prices", redislock.WithExpiry(10*time.Second), redislock.WithFencing())
	ok, err := rw.LockWaitCtx(ctx, 30*time.Second)
	if err != nil || !ok {
		return 0, errors.Join(errBusy, err)
	}
	defer rw.UnlockCtx(context.WithoutCancel(ctx))
	return rw.Fence(), nil // WithFencing: a token greater than every rebuild's before
}

// The README's semaphore, multi-lock and read-write snippets, run.
func Example_primitives() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	svcCtx := &ServiceContext{Redis: zredis.New(mr.Addr(), zredis.WithIdentity())}
	ctx := context.Background()

	release := make(chan struct{})
	started := make(chan struct{}, 2)
	done := make(chan error, 2)
	for i := 0; i < 2; i++ {
		go func() {
			done <- startExport(ctx, svcCtx, "alice", func(context.Context) error {
				started <- struct{}{}
				<-release
				return nil
			})
		}()
	}
	<-started
	<-started
	fmt.Println("third export:", startExport(ctx, svcCtx, "alice", func(context.Context) error { return nil }))
	close(release)
	fmt.Println("first two:", <-done, <-done)

	_ = svcCtx.Redis.SetCtx(ctx, "stock:count:sku-1", "10")
	_ = svcCtx.Redis.SetCtx(ctx, "stock:count:sku-2", "10")
	fmt.Println("order:", placeOrder(ctx, svcCtx, []string{"sku-2", "sku-1"}))
	fmt.Println("bad order:", placeOrder(ctx, svcCtx, []string{"sku-1", "sku-1"}))

	v1, err := rebuildPrices(ctx, svcCtx)
	fmt.Println("rebuild:", v1, err)
	v, err := readPrices(ctx, svcCtx)
	fmt.Println("read sees rebuild:", v, err)
	// Output:
	// third export: two exports are already running, retry later
	// first two: <nil> <nil>
	// order: <nil>
	// bad order: redislock: invalid multi-lock keys: duplicate key "stock:sku-1"
	// rebuild: 1 <nil>
	// read sees rebuild: 1 <nil>
}
