package redislock

import (
	"testing"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/internal/testing/redistest"
)

// TestRedisLockSize: a lock made per request (the middleware's) is one
// allocation of the allocator's 256-byte class; a field added to
// RedisLock that a try-lock with the default options never reads belongs
// in lockMore.
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
