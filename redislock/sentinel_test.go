package redislock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// TestSentinelFailover: a lock taken with replica acknowledgement before
// the master is killed is still held on the promoted replica (a contender
// cannot take it), and the lock works again after the failover.
func TestSentinelFailover(t *testing.T) {
	d := redistest.StartSentinel(t)
	client := d.Client(t)
	const key = "zerolock-test:sentinel"
	held := redislock.New(client, key, redislock.WithReplicaAcks(1, time.Second))
	held.SetExpire(30)
	mustAcquire(t, held, true)

	d.Master.Kill()
	killed := time.Now()
	contender := redislock.New(client, key)
	contender.SetExpire(5)
	var recovered time.Duration
	for deadline := time.Now().Add(30 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		ok, err := contender.AcquireCtx(ctx)
		cancel()
		if err == nil {
			if ok {
				t.Fatal("a contender got the lock after the failover: the replica lost it")
			}
			recovered = time.Since(killed)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer 30s after the master was killed: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the new master answered %v after the kill, with the lock still held", recovered.Round(time.Millisecond))
	if ok, err := held.Release(); !ok || err != nil {
		t.Fatalf("releasing the replicated lock on the new master = %v, %v", ok, err)
	}
	mustAcquire(t, contender, true)
	mustRelease(t, contender, true)
}

// TestReplicaAcksMissing: asking for more acknowledgements than there are
// replicas fails with ErrNotReplicated and leaves no key behind.
func TestReplicaAcksMissing(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	lock := redislock.New(client, "zerolock-test:acks", redislock.WithReplicaAcks(1, 100*time.Millisecond))
	lock.SetExpire(5)
	ok, err := lock.Acquire()
	if ok || !errors.Is(err, redislock.ErrNotReplicated) {
		t.Fatalf("Acquire() with no replica = %v, %v; want ErrNotReplicated", ok, err)
	}
	if n := client.Exists(context.Background(), "zerolock-test:acks").Val(); n != 0 {
		t.Fatal("an unacknowledged acquisition left its key")
	}
	if _, err := redislock.NewRedisLock(newZeroCluster(), "k", redislock.WithReplicaAcks(1, time.Second)).Acquire(); !errors.Is(err, redislock.ErrReplicaAcksUnsupported) {
		t.Fatalf("replica acks on go-zero's cluster store: %v, want ErrReplicaAcksUnsupported", err)
	}
}
