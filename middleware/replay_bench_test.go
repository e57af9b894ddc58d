package middleware_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/testing/floor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
	"github.com/zerolock/zerolock/redislock"
)

// BenchmarkReplay compares a retry served from its stored result (POST
// /pay in replay mode, the handler never runs) with a request whose handler
// does the raw floor of a Redis lock itself (POST /floor: SET NX PX and a
// compare-and-delete), through one real go-zero rest.Server, 25 concurrent
// clients per CPU on keep-alive connections, both answering the same
// 100-byte JSON. The replay path reads the body for the fingerprint, runs
// one script (acquire or read) and decodes the record; the floor sends two
// commands. Profile it with
//
//	go test -run '^$' -bench 'Replay/replay' -cpuprofile cpu.out ./middleware
//	go tool pprof -top -focus zerolock/middleware cpu.out
func BenchmarkReplay(b *testing.B) {
	srv := redistest.Start(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 64})
	b.Cleanup(func() { _ = rdb.Close() })
	if err := floor.Release.Load(context.Background(), rdb).Err(); err != nil {
		b.Fatal(err)
	}
	m, err := middleware.NewLockMiddlewareWithBackend(middleware.LockConf{Mode: middleware.ModeReplay, Rules: []middleware.LockRule{{
		Method: http.MethodPost, Path: "/pay", Keys: []string{"header:Authorization", "header:Idempotency-Key"},
	}}}, redislock.NewBackend(rdb, redislock.WithoutWakeups()))
	if err != nil {
		b.Fatal(err)
	}
	reply := []byte(`{"paymentId":"pay_3MtwBwLkdIwHu7ix28a3tqPa","status":"succeeded","amount":500,"currency":"eur"}`)
	answer := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(reply)
	}
	var runs atomic.Int64
	conf := resttest.Conf(b)
	conf.CpuThreshold = 0 // go-zero's load shedding would answer 503 under a saturating benchmark
	base := resttest.ServeConf(b, conf, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{
		{Method: http.MethodPost, Path: "/pay", Handler: func(w http.ResponseWriter, r *http.Request) {
			runs.Add(1)
			answer(w)
		}},
		{Method: http.MethodPost, Path: "/floor", Handler: func(w http.ResponseWriter, r *http.Request) {
			key := "bench:floor:" + r.Header.Get("Idempotency-Key")
			if ok, err := floor.Cycle(r.Context(), rdb, key, key, 10*time.Second); !ok || err != nil {
				http.Error(w, "floor", http.StatusConflict)
				return
			}
			answer(w)
		}},
	})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	b.Cleanup(client.CloseIdleConnections)
	post := func(path, key string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(`{"amount":500,"currency":"eur"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer bench-user") // the replay rule's caller; the floor ignores it
		req.Header.Set("Idempotency-Key", key)
		return client.Do(req)
	}
	resp, err := post("/pay", "bench-replay")
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("the first request: %d", resp.StatusCode)
	}

	var next atomic.Int64
	for _, name := range []string{"floor", "replay"} {
		b.Run(name, func(b *testing.B) {
			b.SetParallelism(25)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					key := "bench-replay"
					if name == "floor" {
						key = strconv.FormatInt(next.Add(1), 10)
					}
					resp, err := post("/"+map[string]string{"floor": "floor", "replay": "pay"}[name], key)
					if err != nil {
						b.Error(err)
						return
					}
					body, _ := io.ReadAll(resp.Body) // to EOF, so the connection is reused
					resp.Body.Close()
					n := len(body)
					if resp.StatusCode != http.StatusOK || n != len(reply) ||
						(name == "replay" && resp.Header.Get("Idempotent-Replayed") != "true") {
						b.Errorf("%s: %d, %d bytes, replayed %q", name, resp.StatusCode, n, resp.Header.Get("Idempotent-Replayed"))
						return
					}
				}
			})
		})
	}
	if n := runs.Load(); n != 1 {
		b.Fatalf("the replayed handler ran %d times, want once", n)
	}
}
