package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/core/limit"
	"github.com/zeromicro/go-zero/rest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/interceptor"
	rawfloor "github.com/zerolock/zerolock/internal/testing/floor"
	"github.com/zerolock/zerolock/internal/testing/testpb"
	"github.com/zerolock/zerolock/middleware"
	"github.com/zerolock/zerolock/redislock"
)

// The server scenarios compare a route (or method) guarded by zerolock with
// the same server whose handler performs the raw floor itself: the
// difference is what the middleware or interceptor adds.
const (
	httpScenario   = "REST middleware, 50 keep-alive clients"
	replayScenario = "REST replay: retries served from Redis, 50 keep-alive clients"
	grpcScenario   = "gRPC interceptor, 50 clients"
	// rateHTTPScenario: a route under a rate rule (Quota 100 per 1s, each
	// request its own order id, so every one is admitted) against the
	// handler a go-zero user writes today, calling go-zero's PeriodLimit
	// on the same key, both on go-zero's store.
	rateHTTPScenario = "REST rate rule, 50 keep-alive clients"
	serverClients    = 50
)

// rateRuleQuota is the REST rate rule's quota per second: one request per
// key, so never reached.
const rateRuleQuota = 100

// httpBench serves POST /locked/orders through the middleware and POST
// /floor/orders with the floor in its handler, on a loopback port.
type httpBench struct {
	base   string
	server *http.Server
	client *http.Client
}

func startHTTP(cl clients) (*httpBench, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	var c rest.RestConf
	if err := conf.FillDefault(&c); err != nil {
		return nil, err
	}
	c.Name, c.Host, c.Port, c.DevServer.Enabled = "zerolock-bench", "127.0.0.1", port, false
	c.Timeout, c.MaxConns = 0, 100000
	c.Middlewares.Shedding = false
	c.Log.Level, c.Log.Stat = "error", false // no access log line per request
	server := rest.MustNewServer(c)
	lock, err := middleware.NewLockMiddlewareWithBackend(middleware.LockConf{Rules: []middleware.LockRule{{
		Method: http.MethodPost, Path: "/locked/orders", Keys: []string{"header:X-User", "json:orderId"},
	}}}, redislock.NewBackend(cl.redis, redislock.WithoutWakeups()))
	if err != nil {
		return nil, err
	}
	// The same rule with renewal off, as it was by default before issue 26:
	// the cost of renewing by default, measured in the same run.
	noRenew, err := middleware.NewLockMiddlewareWithBackend(middleware.LockConf{DisableRenew: true, Rules: []middleware.LockRule{{
		Method: http.MethodPost, Path: "/norenew/orders", Keys: []string{"header:X-User", "json:orderId"},
	}}}, redislock.NewBackend(cl.redis, redislock.WithoutWakeups()))
	if err != nil {
		return nil, err
	}
	replay, err := middleware.NewLockMiddlewareWithBackend(middleware.LockConf{Rules: []middleware.LockRule{{
		Method: http.MethodPost, Path: "/replay/payments", Keys: []string{"header:Authorization", "header:Idempotency-Key"},
		Mode: "replay", Retain: time.Hour,
	}}}, redislock.NewBackend(cl.redis, redislock.WithoutWakeups()))
	if err != nil {
		return nil, err
	}
	// On go-zero's store, as a go-zero service wires it and as the
	// PeriodLimit handler below runs.
	rate, err := middleware.NewLockMiddleware(middleware.LockConf{Rules: []middleware.LockRule{{
		Method: http.MethodPost, Path: "/rate/orders", Keys: []string{"header:X-User", "json:orderId"},
		Mode: "rate", Quota: rateRuleQuota, Period: time.Second,
	}}}, cl.gozero)
	if err != nil {
		return nil, err
	}
	periodLimit := limit.NewPeriodLimit(1, rateRuleQuota, cl.gozero, "bench:http-periodlimit:")
	server.Use(lock.Handle)
	server.Use(noRenew.Handle)
	server.Use(replay.Handle)
	server.Use(rate.Handle)
	server.AddRoutes([]rest.Route{
		{Method: http.MethodPost, Path: "/locked/orders", Handler: func(w http.ResponseWriter, r *http.Request) {}},
		{Method: http.MethodPost, Path: "/norenew/orders", Handler: func(w http.ResponseWriter, r *http.Request) {}},
		{Method: http.MethodPost, Path: "/replay/payments", Handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"paymentId":"pay-1","amount":500,"currency":"EUR","status":"succeeded"}`))
		}},
		{Method: http.MethodPost, Path: "/rate/orders", Handler: func(w http.ResponseWriter, r *http.Request) {}},
		{Method: http.MethodPost, Path: "/periodlimit/orders", Handler: func(w http.ResponseWriter, r *http.Request) {
			// What go-zero's docs show: a handler (or hand-written
			// middleware) calling core/limit, keyed as the rule is.
			body, _ := io.ReadAll(r.Body)
			if code, err := periodLimit.TakeCtx(r.Context(), r.Header.Get("X-User")+":"+string(body)); err != nil ||
				code == limit.OverQuota {
				w.WriteHeader(http.StatusTooManyRequests)
			}
		}},
		{Method: http.MethodPost, Path: "/floor/orders", Handler: func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body) // the order's JSON: distinct per request
			key := "bench:http-floor:" + string(body)
			if ok, err := rawfloor.Cycle(r.Context(), cl.redis, key, key, expiry); !ok || err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}},
	})
	started := make(chan *http.Server, 1)
	go server.StartWithOpts(func(s *http.Server) { started <- s })
	b := &httpBench{
		base:   fmt.Sprintf("http://127.0.0.1:%d", port),
		server: <-started,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: serverClients * 2}},
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			conn.Close()
			return b, nil
		}
	}
	return nil, fmt.Errorf("rest server did not start")
}

func (b *httpBench) stop() {
	_ = b.server.Shutdown(context.Background())
}

// run sends distinct orders to path from serverClients goroutines for d and
// returns requests per second; any answer but 200 is an error.
func (b *httpBench) run(path string, round int, d time.Duration) sample {
	var next atomic.Int64
	return drive(serverClients, d, func(int) func(context.Context) error {
		return func(ctx context.Context) error {
			id := "r" + strconv.Itoa(round) + "-" + strconv.FormatInt(next.Add(1), 10)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.base+path, strings.NewReader(`{"orderId":"`+id+`"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-User", "bench")
			resp, err := b.client.Do(req)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("status %d", resp.StatusCode)
			}
			return nil
		}
	})
}

// replay sends retries of serverClients stored payments, one key per
// goroutine, for d: each is answered from the result the first request
// stored (prime sends those), without running the handler. Any answer but
// a replayed 200 is an error.
func (b *httpBench) replay(round int, d time.Duration) sample {
	return drive(serverClients, d, func(g int) func(context.Context) error {
		key := "r" + strconv.Itoa(round) + "-" + strconv.Itoa(g)
		return func(ctx context.Context) error {
			status, replayed, err := b.pay(ctx, key)
			switch {
			case err != nil:
				return err
			case status != http.StatusOK || !replayed:
				return fmt.Errorf("status %d, replayed %v", status, replayed)
			}
			return nil
		}
	})
}

// prime stores the results that replay's retries of round get.
func (b *httpBench) prime(round int) error {
	for g := 0; g < serverClients; g++ {
		key := "r" + strconv.Itoa(round) + "-" + strconv.Itoa(g)
		if status, _, err := b.pay(context.Background(), key); err != nil || status != http.StatusOK {
			return fmt.Errorf("prime %s: status %d, %v", key, status, err)
		}
	}
	return nil
}

// pay sends one payment with an Idempotency-Key.
func (b *httpBench) pay(ctx context.Context, key string) (status int, replayed bool, err error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.base+"/replay/payments", strings.NewReader(`{"amount":500}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer bench") // the caller, which a replay rule's keys must name
	req.Header.Set("Idempotency-Key", key)
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, false, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Idempotent-Replayed") == "true", nil
}

// grpcBench serves Payments: Pay guarded by the interceptor, Refund doing
// the floor in its handler.
type grpcBench struct {
	server *grpc.Server
	conn   *grpc.ClientConn
	client testpb.PaymentsClient
}

// startGRPC starts a Payments server; disableRenew turns renewal off, as
// it was by default before issue 26.
func startGRPC(cl clients, disableRenew bool) (*grpcBench, error) {
	lock, err := interceptor.UnaryServerInterceptorWithBackend(interceptor.LockConf{DisableRenew: disableRenew, Rules: []interceptor.LockRule{{
		Method: "/zerolock.test.Payments/Pay", Keys: []string{"field:order.id", "metadata:x-user"},
	}}}, redislock.NewBackend(cl.redis, redislock.WithoutWakeups()))
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := grpc.NewServer(grpc.UnaryInterceptor(lock))
	testpb.RegisterPaymentsServer(s, rawfloor.Payments{Redis: cl.redis, Prefix: "bench:grpc-floor:", TTL: expiry})
	go func() { _ = s.Serve(l) }()
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		s.Stop()
		return nil, err
	}
	return &grpcBench{server: s, conn: conn, client: testpb.NewPaymentsClient(conn)}, nil
}

func (b *grpcBench) stop() {
	_ = b.conn.Close()
	b.server.Stop()
}

// run calls Pay (locked) or Refund (floor) with distinct orders.
func (b *grpcBench) run(locked bool, round int, d time.Duration) sample {
	var next atomic.Int64
	return drive(serverClients, d, func(int) func(context.Context) error {
		return func(ctx context.Context) error {
			id := "r" + strconv.Itoa(round) + "-" + strconv.FormatInt(next.Add(1), 10)
			req := &testpb.PayRequest{Order: &testpb.Order{Id: id}}
			ctx = metadata.AppendToOutgoingContext(ctx, "x-user", "bench")
			var err error
			if locked {
				_, err = b.client.Pay(ctx, req)
			} else {
				_, err = b.client.Refund(ctx, req)
			}
			return err
		}
	})
}

// drive runs goroutines workers for d, each calling the operation newOp
// made for it, and measures operations per second. An error is counted,
// not an operation, except the run's own deadline reported by a client.
func drive(goroutines int, d time.Duration, newOp func(g int) func(context.Context) error) sample {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var (
		ops, errs atomic.Int64
		wg        sync.WaitGroup
		mu        sync.Mutex
		first     error
	)
	start := time.Now()
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			op := newOp(g)
			for ctx.Err() == nil {
				if err := op(ctx); err != nil {
					// gRPC and net/http may report the run's deadline a
					// moment before ctx does: that is the end, not an error.
					if errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded {
						return
					}
					if ctx.Err() == nil {
						errs.Add(1)
						mu.Lock()
						if first == nil {
							first = err
						}
						mu.Unlock()
					}
					continue
				}
				ops.Add(1)
			}
		}()
	}
	wg.Wait()
	n := ops.Load()
	return sample{count: n, ops: float64(n) / time.Since(start).Seconds(), errors: errs.Load(), firstErr: first}
}
