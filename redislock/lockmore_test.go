package redislock

import (
	"testing"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
)

// TestRedisLockSize: a lock made per request is one allocation of the
// allocator's 256-byte class (its lockMore is shared: see
// TestBackendLockMoreShared); a field added to RedisLock that a try-lock
// with the default options seldom needs belongs in lockMore.
func TestRedisLockSize(t *testing.T) {
	if n := unsafe.Sizeof(RedisLock{}); n > 256 {
		t.Errorf("RedisLock is %d bytes, want at most 256", n)
	}
}

// TestLockMoreShared: locks with the default options share defaultMore;
// a lock with any option kept there has its own, and building one never
// writes the shared one.
func TestLockMoreShared(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer client.Close()
	a, b := New(client, "a"), New(client, "b", WithTolerance(time.Second))
	if a.more != defaultMore || b.more != defaultMore {
		t.Fatalf("default locks' lockMore = %p, %p, want the shared %p", a.more, b.more, defaultMore)
	}
	for name, o := range map[string]Option{
		"WithoutWakeups":  WithoutWakeups(),
		"WithFencing":     WithFencing(),
		"WithBackoff":     WithBackoff(time.Millisecond, time.Second),
		"WithReplicaAcks": WithReplicaAcks(1, time.Second),
	} {
		l := New(client, "c", o)
		if l.more == defaultMore {
			t.Errorf("%s: the lock shares defaultMore", name)
		}
	}
	quiet := New(client, "q", WithoutWakeups())
	if quiet.more.native == nil {
		t.Error("WithoutWakeups: no native release")
	}
	fenced := New(client, "f", WithFencing())
	if len(fenced.more.fenceKeys) != 2 || fenced.more.fenceKeys[0] != "f" {
		t.Errorf("WithFencing: fenceKeys = %q", fenced.more.fenceKeys)
	}
	if d := *defaultMore; d.native != nil || d.fenceKeys != nil || d.acks != 0 || d.waitOpts != defaultWaitOptions() {
		t.Errorf("defaultMore was written: %+v", *defaultMore)
	}
	if a.token() != a.tokenArg() || len(a.token()) != 27 {
		t.Errorf("token %q, boxed %v", a.token(), a.tokenArg())
	}
}

// TestBackendLockMoreShared: the middleware's locks (a Backend
// WithoutWakeups, one lock per request) share the Backend's lockMore,
// which has the store's native release; a lock made Waited (it wakes
// waiters) has no native release, a fenced one a lockMore of its own.
func TestBackendLockMoreShared(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer client.Close()
	b := NewBackend(client, WithoutWakeups())
	lockOf := func(key string, lo zerolock.LockerOptions) *RedisLock {
		return b.NewLocker(key, lo).(recordingLock).RedisLock
	}
	x, y := lockOf("x", zerolock.LockerOptions{Expiry: time.Second}), lockOf("y", zerolock.LockerOptions{Name: "n"})
	if x.more != y.more || x.more == defaultMore || x.more.native == nil || !x.quiet {
		t.Errorf("quiet locks: lockMore %p and %p (default %p), native %p, quiet %v", x.more, y.more, defaultMore, x.more.native, x.quiet)
	}
	if w := lockOf("w", zerolock.LockerOptions{Waited: true}); w.more.native != nil || w.quiet {
		t.Errorf("Waited lock: native %p, quiet %v", w.more.native, w.quiet)
	}
	f := lockOf("f", zerolock.LockerOptions{Fencing: true})
	if f.more == x.more || len(f.more.fenceKeys) != 2 || f.more.fenceKeys[0] != "f" || f.more.native == nil {
		t.Errorf("fenced lock: lockMore %+v", *f.more)
	}
	loud := NewBackend(client).NewLocker("l", zerolock.LockerOptions{}).(recordingLock).RedisLock
	if loud.more != defaultMore {
		t.Errorf("a default Backend's lock has lockMore %p, want defaultMore", loud.more)
	}
	fenced := NewBackend(client, WithFencing())
	a := fenced.NewLocker("a", zerolock.LockerOptions{}).(recordingLock).RedisLock
	if len(a.more.fenceKeys) != 2 || a.more.fenceKeys[0] != "a" {
		t.Errorf("WithFencing Backend's lock: fenceKeys %q", a.more.fenceKeys)
	}
	quietAllocs := testing.AllocsPerRun(100, func() { _ = lockOf("z", zerolock.LockerOptions{Expiry: time.Second}) })
	defaultAllocs := testing.AllocsPerRun(100, func() { _ = New(client, "z") })
	if quietAllocs > defaultAllocs { // the lock, its token, the key and token boxed (more under -race)
		t.Errorf("a quiet Backend's NewLocker: %v allocations, a default New %v", quietAllocs, defaultAllocs)
	}
}

// TestSetNXArgsCachedFromSecondAcquire: on go-zero's store a lock's first
// acquire sends SET NX with arguments built for it alone (a lock made per
// request has no second), and a later one builds them once for the lock.
func TestSetNXArgsCachedFromSecondAcquire(t *testing.T) {
	mr := redistest.Miniredis(t)
	store := zredis.MustNewRedis(zredis.RedisConf{Host: mr.Addr(), Type: zredis.NodeType, DisableIdentity: true})
	l := NewRedisLock(store, "setnxargs")
	l.SetExpire(30)
	for i := range 3 {
		if ok, err := l.Acquire(); !ok || err != nil {
			t.Fatalf("acquire %d = %v, %v", i, ok, err)
		}
		if built := l.acqCmds.Load() != nil; built != (i > 0) {
			t.Errorf("after acquire %d: arguments cached = %v", i, built)
		}
		if ok, err := l.Release(); !ok || err != nil {
			t.Fatalf("release %d = %v, %v", i, ok, err)
		}
	}
	if mr.Exists("setnxargs") {
		t.Error("the key outlived its release")
	}
}
