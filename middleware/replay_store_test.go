package middleware_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/replay"
	"github.com/zerolock/zerolock/internal/testing/faultproxy"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
)

// On a Redis Cluster store, replay works for keys in every slot: the
// results of several keys land on more than one master, and each is
// replayed.
func TestReplayOnCluster(t *testing.T) {
	cluster := redistest.SharedCluster(t)
	store := zredis.MustNewRedis(zredis.RedisConf{
		Host: strings.Join(cluster.Addrs(), ","), Type: zredis.ClusterType, NonBlock: true, DisableIdentity: true,
	})
	c := replayConf("/pay", payKeys...)
	c.Prefix = fmt.Sprintf("zerolock-test-replay-%d", time.Now().UnixNano())
	var p payments
	base := servePayments(t, c, store, "/pay", &p)

	const keys = 8
	for i := 0; i < keys; i++ {
		key := fmt.Sprintf("k-cluster-%d", i)
		first := pay(t, base+"/pay", key, `{"amount":1}`)
		if first.Status != http.StatusCreated {
			t.Fatalf("%s first: %d %s", key, first.Status, first.Body)
		}
		sameAnswer(t, first, pay(t, base+"/pay", key, `{"amount":1}`))
	}
	if n := p.runs.Load(); n != keys {
		t.Fatalf("the handler ran %d times, want once per key (%d)", n, keys)
	}

	var masters atomic.Int32
	ctx := context.Background()
	err := cluster.Client(t).ForEachMaster(ctx, func(ctx context.Context, node *goredis.Client) error {
		found, err := node.Keys(ctx, c.Prefix+":*").Result()
		if len(found) > 0 {
			masters.Add(1) // only this test's keys are counted
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := masters.Load(); n < 2 {
		t.Fatalf("the results of %d keys are on %d master(s); want several slots", keys, n)
	}
}

// The connection to Redis breaks between the handler's return and the
// store of its result. A retry is then either replayed or refused, never
// run again while the first request's lock lives.
//
// What happens, and why:
//   - Reset (every open connection is reset, new ones accepted): the result
//     is stored and the retry is replayed. The reset connection is found
//     dead when the pool hands it out, or fails the command, which go-redis
//     retries on a new connection (record.lua answers 1 to a resent record
//     that the first send already stored).
//   - Cut (no connection until Heal): the store fails (logged) and the
//     client still gets the handler's answer. The lock stays in Redis with
//     the first request's token until its Expire, so retries are refused
//     with 409 until then; after it they run again, since no result was
//     kept.
func TestReplayStoreConnectionFault(t *testing.T) {
	srv := redistest.Start(t)
	const expire = 2 * time.Second
	for _, tc := range []struct {
		name   string
		fault  func(*faultproxy.Proxy)
		replay bool
	}{
		{"reset", (*faultproxy.Proxy).Reset, true},
		{"cut", (*faultproxy.Proxy).Cut, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy := faultproxy.Start(t, srv.Addr())
			store := zredis.MustNewRedis(zredis.RedisConf{Host: proxy.Addr(), Type: zredis.NodeType, NonBlock: true, DisableIdentity: true})
			c := replayConf("/pay", payKeys...)
			c.Expire = expire
			var p payments
			inside, proceed := make(chan struct{}), make(chan struct{})
			var held atomic.Bool
			m := mustMiddleware(t, c, store)
			base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{{
				Method: http.MethodPost, Path: "/pay", Handler: func(w http.ResponseWriter, r *http.Request) {
					if held.CompareAndSwap(false, true) {
						close(inside)
						<-proceed
					}
					p.handle(w, r)
				},
			}}, rest.WithJwt(jwtSecret))

			start := time.Now() // before the first's lock is taken, so its expiry is later
			firstDone := make(chan resttest.Result, 1)
			go func() { firstDone <- pay(t, base+"/pay", "k-fault-"+tc.name, `{"amount":3}`) }()
			select {
			case <-inside:
			case r := <-firstDone:
				t.Fatalf("first answered %d %s before reaching the handler", r.Status, r.Body)
			}
			tc.fault(proxy)
			close(proceed)
			first := <-firstDone
			if first.Status != http.StatusCreated {
				t.Fatalf("first: %d %s, want the handler's 201 whatever the store did", first.Status, first.Body)
			}
			proxy.Heal()

			outcomes := map[string]int{}
			for {
				r := pay(t, base+"/pay", "k-fault-"+tc.name, `{"amount":3}`)
				lockLives := time.Since(start) < expire
				switch {
				case r.Header.Get("Idempotent-Replayed") == "true":
					sameAnswer(t, first, r)
					outcomes["replayed"]++
				case r.Status == http.StatusConflict:
					outcomes["refused"]++
				case r.Status == http.StatusServiceUnavailable:
					outcomes["store unavailable"]++ // go-zero's breaker, still counting the fault
				case r.Status == http.StatusCreated && !lockLives:
					outcomes["ran after expiry"]++
				default:
					t.Fatalf("retry %v after the first: %d %s (handler ran %d times)", time.Since(start), r.Status, r.Body, p.runs.Load())
				}
				if p.runs.Load() > 1 && lockLives {
					t.Fatalf("the handler ran again %v after the first, while its lock lived", time.Since(start))
				}
				if outcomes["replayed"] > 0 || outcomes["ran after expiry"] > 0 {
					break
				}
				time.Sleep(100 * time.Millisecond) // waiting for the lock's expiry, not for a goroutine
			}
			t.Logf("%s: retries %v", tc.name, outcomes)
			if got := outcomes["replayed"] > 0; got != tc.replay {
				t.Fatalf("%s: retries %v; want replayed %v", tc.name, outcomes, tc.replay)
			}
		})
	}
}

// A key whose value is not a result this version can replay (corrupt, a
// gRPC result, a truncated payload) is answered 500
// stored_result_unreadable, never replayed wrongly or run, and is left as
// it is.
func TestReplayUnreadableRecord(t *testing.T) {
	srv := redistest.Start(t)
	var p payments
	base := servePayments(t, replayConf("/pay", payKeys...), newStore(srv), "/pay", &p)
	admin := srv.Client(t)
	ctx := context.Background()

	first := pay(t, base+"/pay", "k-corrupt", `{"amount":9}`)
	keys, err := admin.Keys(ctx, "zerolock:*").Result()
	if err != nil || len(keys) != 1 || first.Status != http.StatusCreated {
		t.Fatalf("first: %d; keys %v, %v", first.Status, keys, err)
	}
	stored, err := admin.Get(ctx, keys[0]).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	// recordPrefix of redislock: what marks a value as a record, not a token.
	const recordPrefix = "\x00zerolock-record:"
	if !strings.HasPrefix(string(stored), recordPrefix) {
		t.Fatalf("stored value %q is not a record", stored)
	}
	rec, err := replay.Decode(stored[len(recordPrefix):], 1<<21)
	if err != nil {
		t.Fatal(err)
	}
	grpc, truncated := rec, rec
	grpc.Kind = 'g'
	truncated.Payload = truncated.Payload[:len(truncated.Payload)-3]
	for _, tc := range []struct{ name, value string }{
		{"garbage", recordPrefix + "garbage"},
		{"empty", recordPrefix},
		{"another transport", recordPrefix + string(replay.Encode(grpc))},
		{"truncated payload", recordPrefix + string(replay.Encode(truncated))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := admin.Set(ctx, keys[0], tc.value, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			r := pay(t, base+"/pay", "k-corrupt", `{"amount":9}`)
			// Not a 5xx: the client did nothing wrong, and the record may be a
			// later build's during a rolling deploy.
			if r.Status != http.StatusConflict || errorCode(r) != "stored_result_unreadable" || r.Header.Get("Retry-After") == "" {
				t.Fatalf("retry on a %s value: %d %s, want 409 stored_result_unreadable with Retry-After", tc.name, r.Status, r.Body)
			}
			if v, _ := admin.Get(ctx, keys[0]).Result(); v != tc.value {
				t.Fatal("the unreadable value was changed")
			}
		})
	}
	if n := p.runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
}
