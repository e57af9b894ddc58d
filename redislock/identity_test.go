package redislock_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// setinfoCounter counts the CLIENT commands sent through a go-zero store:
// the identity probe is one, go-redis's own connection set-up goes through
// its pipeline hook, which this does not count.
type setinfoCounter struct{ n atomic.Int64 }

func (c *setinfoCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *setinfoCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "client" {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (c *setinfoCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A server that accepts CLIENT SETINFO (7.2 and later) passes the start-up
// check with go-zero's default configuration; one that rejects it (7.0,
// Debian 12's) is refused there (its locks work and warn, see
// TestIdentityRejectedLocksWorkAndWarnOnce). Either way the verdict comes
// from the real server.
func TestIdentityOnRealServer(t *testing.T) {
	srv := redistest.Start(t)
	store := zredis.MustNewRedis(zredis.RedisConf{Host: srv.Addr(), Type: zredis.NodeType, NonBlock: true})
	accepts := srv.Client(t).Do(context.Background(), "client", "setinfo", "lib-ver", "1").Err() == nil

	err := redislock.CheckGoZeroStore(context.Background(), store)
	if accepts && err != nil {
		t.Fatalf("server accepts CLIENT SETINFO, yet CheckGoZeroStore = %v", err)
	}
	if !accepts && !errors.Is(err, redislock.ErrIdentityRejected) {
		t.Fatalf("server rejects CLIENT SETINFO, yet CheckGoZeroStore = %v", err)
	}
	// go-zero shares one client per address: the fixed store gets a server
	// of its own.
	fixed := zredis.MustNewRedis(zredis.RedisConf{Host: redistest.Start(t).Addr(), Type: zredis.NodeType, NonBlock: true, DisableIdentity: true})
	if err := redislock.CheckGoZeroStore(context.Background(), fixed); err != nil {
		t.Fatalf("CheckGoZeroStore with DisableIdentity = %v", err)
	}
}

// An unreachable server gets no verdict: the check says why and asks again
// next time, and the lock's own error is the connection's.
func TestIdentityUnreachableIsNotAVerdict(t *testing.T) {
	mr := redistest.Miniredis(t) // identity on: go-zero keeps its client for the address
	addr := mr.Addr()
	mr.Close()
	store := zredis.New(addr)
	err := redislock.CheckGoZeroStore(context.Background(), store)
	if err == nil || errors.Is(err, redislock.ErrIdentityRejected) {
		t.Fatalf("CheckGoZeroStore on a closed server = %v, want its connection error", err)
	}
	if err := mr.StartAddr(addr); err != nil {
		t.Skipf("cannot restart miniredis on %s: %v", addr, err)
	}
	// go-redis paces its redials after failures, and the connection errors
	// opened go-zero's breaker, which counts each call it drops in its
	// 10 s window and passes a share of calls that shrinks as they add up:
	// poll for the verdict, slowly enough for calls to pass.
	deadline := time.Now().Add(20 * time.Second)
	for err = redislock.CheckGoZeroStore(context.Background(), store); !errors.Is(err, redislock.ErrIdentityRejected); err = redislock.CheckGoZeroStore(context.Background(), store) {
		if time.Now().After(deadline) {
			t.Fatalf("after the server came back, CheckGoZeroStore = %v, want ErrIdentityRejected", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Only a reply that refuses CLIENT SETINFO itself is a verdict: a wrong
// password fails the connection before the command is sent, which says
// nothing of SETINFO, so the check reports it and asks again later (it was
// taken for a rejection, and the fix it named was the wrong one).
func TestIdentityOtherErrorsAreNoVerdict(t *testing.T) {
	srv := redistest.Start(t)
	if err := srv.Client(t).ConfigSet(context.Background(), "requirepass", "secret").Err(); err != nil {
		t.Fatal(err)
	}
	store := zredis.New(srv.Addr(), zredis.WithPass("wrong"))
	err := redislock.CheckGoZeroStore(context.Background(), store)
	if err == nil || errors.Is(err, redislock.ErrIdentityRejected) {
		t.Fatalf("CheckGoZeroStore with a wrong password = %v, want the auth error, not ErrIdentityRejected", err)
	}
	if !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("CheckGoZeroStore = %v, want the server's WRONGPASS", err)
	}
}

// A server that accepts connections and never answers: every caller of the
// check returns when its own context ends, not one after another behind a
// probe that waits for go-redis's 3 s read timeout.
func TestIdentityWaitersHonourTheirContexts(t *testing.T) {
	l := redistest.Listen(t) // identity on: go-zero keeps its client for the address
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	accepted := make(chan struct{})
	go func() { // accepts, never answers
		defer close(accepted)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-accepted
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close() // ends the probe still reading
		}
	})

	store := zredis.New(l.Addr().String())
	const callers, wait = 4, 300 * time.Millisecond
	var wg sync.WaitGroup
	took := make(chan time.Duration, callers)
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			start := time.Now()
			err := redislock.CheckGoZeroStore(ctx, store)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("CheckGoZeroStore on a hung server = %v, want its context's deadline", err)
			}
			took <- time.Since(start)
		}()
	}
	wg.Wait()
	close(took)
	for d := range took {
		// Queued behind the probe, the callers returned after 3, 6, 9, 12 s.
		if d > 2*time.Second {
			t.Fatalf("a caller with a %v deadline returned after %v", wait, d)
		}
	}
}
