package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// TestOneInstanceFromManyGoroutines: goroutines sharing one fresh lock all
// get true, as with go-zero's lock, even though the first of them goes the
// SET NX way and may find the key already holding its own token.
func TestOneInstanceFromManyGoroutines(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		const trials, goroutines = 200, 8
		for trial := 0; trial < trials; trial++ {
			lock := b.newLock(key)
			lock.SetExpire(5)
			var wg sync.WaitGroup
			refused := make(chan error, goroutines)
			for g := 0; g < goroutines; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if ok, err := lock.Acquire(); !ok || err != nil {
						refused <- err
					}
				}()
			}
			wg.Wait()
			close(refused)
			for err := range refused {
				t.Fatalf("trial %d: a goroutine sharing the holding instance got false (err %v)", trial, err)
			}
			mustRelease(t, lock, true)
		}
	})
}

// lostReplyStore runs the fast SET on the server but reports a failure, as
// a reply lost to a reset connection would.
type lostReplyStore struct {
	*redis.Client
}

var errLostReply = errors.New("reply lost")

func (s lostReplyStore) Process(ctx context.Context, cmd redis.Cmder) error {
	err := s.Client.Process(ctx, cmd)
	if cmd.Name() == "set" {
		cmd.SetErr(errLostReply)
		return errLostReply
	}
	return err
}

// onceStore records, for each command a lock builds itself, whether it
// asked go-redis not to resend it.
type onceStore struct {
	*redis.Client
	noRetry map[string]bool
}

func (s onceStore) Process(ctx context.Context, cmd redis.Cmder) error {
	s.noRetry[cmd.Name()] = cmd.NoRetry()
	return s.Client.Process(ctx, cmd)
}

// TestFastSetAndReleaseAreSentOnce: on a go-redis client, the fresh
// acquire's SET NX and the release are marked not to be resent after a
// lost reply, where go-redis's resend would answer "not set" for a key the
// first send took, or "not held" for one the first send deleted.
func TestFastSetAndReleaseAreSentOnce(t *testing.T) {
	srv := redistest.Start(t)
	store := onceStore{srv.Client(t), map[string]bool{}}
	lock := redislock.New(store, "zerolock-test:once")
	lock.SetExpire(5)
	mustAcquire(t, lock, true)
	mustRelease(t, lock, true)
	if !store.noRetry["set"] || !store.noRetry["evalsha"] {
		t.Fatalf("sent once: %v; want set and evalsha", store.noRetry)
	}
}

// setArgsStore is a Store that cannot send a command it did not build, as
// go-zero's store cannot: its locks acquire with SET NX PX GET.
type setArgsStore struct {
	c *redis.Client
}

func (s setArgsStore) SetArgs(ctx context.Context, key string, value any, a redis.SetArgs) *redis.StatusCmd {
	return s.c.SetArgs(ctx, key, value, a)
}

func (s setArgsStore) PTTL(ctx context.Context, key string) *redis.DurationCmd {
	return s.c.PTTL(ctx, key)
}

func (s setArgsStore) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return s.c.Eval(ctx, script, keys, args...)
}

func (s setArgsStore) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return s.c.EvalSha(ctx, sha, keys, args...)
}

// retriedStore sends every SET twice and answers the second, as go-redis
// does when the first reply is lost to a reset connection.
type retriedStore struct {
	setArgsStore
}

func (s retriedStore) SetArgs(ctx context.Context, key string, value any, a redis.SetArgs) *redis.StatusCmd {
	_ = s.setArgsStore.SetArgs(ctx, key, value, a)
	return s.setArgsStore.SetArgs(ctx, key, value, a)
}

// TestRetriedAcquireIsAcquired: on a store that resends (go-zero's cannot
// be told not to), a fresh acquire whose SET was sent twice reports the
// lock it took, where SET NX would have answered
// "not set" for a key holding our own token; the key's expiry is the
// lock's.
func TestRetriedAcquireIsAcquired(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	key := "zerolock-test:retried"
	lock := redislock.New(retriedStore{setArgsStore{srv.Client(t)}}, key)
	lock.SetExpire(5)
	mustAcquire(t, lock, true)
	if ttl := admin.PTTL(context.Background(), key).Val(); ttl < 5*time.Second {
		t.Fatalf("PTTL after a retried acquire = %v, want about 5.5s", ttl)
	}
	other := redislock.New(retriedStore{setArgsStore{srv.Client(t)}}, key)
	mustAcquire(t, other, false)
	mustRelease(t, lock, true)
}

// oldRedisStore answers SET with NX and GET as Redis 6 does: a syntax
// error. It counts those requests.
type oldRedisStore struct {
	setArgsStore
	setGets *int
}

func (s oldRedisStore) SetArgs(ctx context.Context, key string, value any, a redis.SetArgs) *redis.StatusCmd {
	if a.Mode == "NX" && a.Get {
		*s.setGets++
		cmd := redis.NewStatusCmd(ctx)
		cmd.SetErr(replyError("ERR syntax error"))
		return cmd
	}
	return s.setArgsStore.SetArgs(ctx, key, value, a)
}

// replyError is an error reply from the server, as go-redis types them.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// TestRedisBefore7: a server that refuses SET NX GET gets the script, and
// a Backend's locks stop asking after the first refusal.
func TestRedisBefore7(t *testing.T) {
	srv := redistest.Start(t)
	var setGets int
	backend := redislock.NewBackend(oldRedisStore{setArgsStore{srv.Client(t)}, &setGets})
	for i := 0; i < 3; i++ {
		lock := backend.NewLocker(fmt.Sprintf("zerolock-test:old-redis:%d", i), zerolock.LockerOptions{Expiry: 5 * time.Second})
		if ok, err := lock.AcquireCtx(context.Background()); !ok || err != nil {
			t.Fatalf("acquire %d on old Redis = %v, %v", i, ok, err)
		}
		rival := backend.NewLocker(fmt.Sprintf("zerolock-test:old-redis:%d", i), zerolock.LockerOptions{Expiry: 5 * time.Second})
		if ok, err := rival.AcquireCtx(context.Background()); ok || err != nil {
			t.Fatalf("rival %d on old Redis = %v, %v", i, ok, err)
		}
		if ok, err := lock.ReleaseCtx(context.Background()); !ok || err != nil {
			t.Fatalf("release %d on old Redis = %v, %v", i, ok, err)
		}
	}
	if setGets != 1 {
		t.Fatalf("SET NX GET sent %d times through one backend, want 1", setGets)
	}
}

// TestUnknownOutcomeIsSettledByNextCall: after an acquire whose reply was
// lost (it did take the key), the next acquire recognises its own token and
// the release deletes it.
func TestUnknownOutcomeIsSettledByNextCall(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	lock := redislock.New(lostReplyStore{srv.Client(t)}, "zerolock-test:lost-reply")
	lock.SetExpire(5)
	if ok, err := lock.Acquire(); ok || !errors.Is(err, errLostReply) {
		t.Fatalf("Acquire with a lost reply = %v, %v; want false and the error", ok, err)
	}
	if admin.Exists(context.Background(), "zerolock-test:lost-reply").Val() != 1 {
		t.Fatal("the lost-reply acquire did not take the key")
	}
	mustAcquire(t, lock, true) // the script sees our token: re-entrant
	mustRelease(t, lock, true)
	if admin.Exists(context.Background(), "zerolock-test:lost-reply").Val() != 0 {
		t.Fatal("release left the key")
	}
}

// TestRWLockUnlocksAreSentOnce: on a go-redis client, an RWLock's read and
// write unlocks are marked not to be resent after a lost reply, as
// RedisLock's release is: a resent unlock finds nothing to remove and
// answers false for a hold the first send freed.
func TestRWLockUnlocksAreSentOnce(t *testing.T) {
	srv := redistest.Start(t)
	for _, side := range []string{"read", "write"} {
		store := onceStore{srv.Client(t), map[string]bool{}}
		rw := redislock.NewRWLock(store, "zerolock-test:rw-once:"+side)
		lock, unlock := rw.LockCtx, rw.UnlockCtx
		if side == "read" {
			lock, unlock = rw.RLockCtx, rw.RUnlockCtx
		}
		if ok, err := lock(context.Background()); !ok || err != nil {
			t.Fatalf("%s lock: %v, %v", side, ok, err)
		}
		clear(store.noRetry)
		if ok, err := unlock(context.Background()); !ok || err != nil {
			t.Fatalf("%s unlock: %v, %v", side, ok, err)
		}
		if !store.noRetry["evalsha"] {
			t.Fatalf("%s unlock sent once: %v; want evalsha", side, store.noRetry)
		}
	}
}
