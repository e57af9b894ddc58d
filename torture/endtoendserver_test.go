package torture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zeromicro/go-zero/core/breaker"
	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/core/logx"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/rest"
	"github.com/zeromicro/go-zero/rest/httpx"
	"github.com/zeromicro/go-zero/zrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/testpb"
	"github.com/zerolock/zerolock/middleware"
)

func init() {
	childRoles["e2erest"] = endToEndRESTChild
	childRoles["e2erpc"] = endToEndRPCChild
}

// The end-to-end services' shape.
const (
	e2ePath = "/checkout"
	// e2eRESTWait lets a client's duplicate wait at the REST service for
	// the first request's answer; the RPC rule has no Wait, so that a
	// duplicate attempt is refused with a RetryInfo, which the client
	// interceptor retries.
	e2eRESTWait = 2 * time.Second
	// e2eRPCTimeout is the zrpc client's Timeout: the deadline of one
	// logical call, its attempts and waits together.
	e2eRPCTimeout = 8 * time.Second
	// e2eProbe is the metadata of the call with which an RPC child checks
	// that the server answering on its port is its own.
	e2eProbe = "torture-probe"
)

// e2eClientConf is the client interceptor's configuration in the REST
// processes: Pay gets an idempotency key derived from the checkout being
// served, and up to 8 attempts, each cut at 2 s.
func e2eClientConf() interceptor.ClientConf {
	return interceptor.ClientConf{
		Methods:        []string{testpb.Payments_Pay_FullMethodName},
		MaxAttempts:    8,
		Backoff:        50 * time.Millisecond,
		AttemptTimeout: 2 * time.Second,
	}
}

// childEnvOf reads what every end-to-end child gets in its environment:
// CHILD_ID, PREFIX, PORT, and EXPIRE, the replay rule's Expire.
func childEnvOf() (id, prefix string, port int, expire time.Duration) {
	port, _ = strconv.Atoi(os.Getenv("PORT"))
	expire, _ = time.ParseDuration(os.Getenv("EXPIRE"))
	return os.Getenv("CHILD_ID"), os.Getenv("PREFIX"), port, expire
}

// childStore is the go-zero store of a child's lock, on REDIS_ADDR.
func childStore() *zredis.Redis {
	return zredis.MustNewRedis(zredis.RedisConf{Host: os.Getenv("REDIS_ADDR"), Type: zredis.NodeType,
		NonBlock: true, DisableIdentity: true})
}

// endToEndRESTChild serves POST /checkout on a go-zero rest.Server on
// 127.0.0.1:PORT, behind the middleware in replay mode keyed on the
// caller and its Idempotency-Key (with Wait), and pays each checkout
// through a zrpc client of the RPC services at RPC_ADDRS (comma-separated)
// with the client interceptor. It prints "listening" once the server
// accepted a connection of its own, and serves until its stdin closes or
// it is killed.
func endToEndRESTChild(client *redis.Client) int {
	id, prefix, port, expire := childEnvOf()
	m, err := middleware.NewLockMiddleware(middleware.LockConf{
		Prefix: prefix + ":rest",
		Expire: expire,
		Mode:   middleware.ModeReplay,
		Retain: 10 * time.Minute,
		Rules: []middleware.LockRule{{Method: http.MethodPost, Path: e2ePath,
			Keys: []string{"header:Authorization", "header:Idempotency-Key"}, Wait: e2eRESTWait}},
	}, childStore())
	if err != nil {
		fmt.Println("failed", err)
		return 1
	}
	h := &checkoutHandler{client: client, id: id, prefix: prefix}
	var cc zrpc.RpcClientConf
	if err := conf.FillDefault(&cc); err != nil {
		fmt.Println("failed", err)
		return 1
	}
	cc.Endpoints, cc.Timeout = strings.Split(os.Getenv("RPC_ADDRS"), ","), e2eRPCTimeout.Milliseconds()
	rpc, err := zrpc.NewClient(cc,
		zrpc.WithUnaryClientInterceptor(interceptor.MustUnaryClientInterceptor(e2eClientConf())),
		zrpc.WithUnaryClientInterceptor(h.countAttempt))
	if err != nil {
		fmt.Println("failed", err)
		return 1
	}
	h.payments = testpb.NewPaymentsClient(rpc.Conn())

	// Its 30s timeout is far past the zrpc client's Timeout.
	server, err := childRestServer("zerolock-torture-e2e-rest", port)
	if err != nil {
		fmt.Println("failed", err)
		return 1
	}
	server.Use(m.Handle)
	server.AddRoute(rest.Route{Method: http.MethodPost, Path: e2ePath, Handler: h.checkout})
	if err := startREST(server, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err != nil {
		fmt.Println("failed", err)
		return 1
	}
	fmt.Println("listening")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// checkoutRequest is the body a client sends: the payment's work is part
// of the request, so every retry of a key asks for the same.
type checkoutRequest struct {
	Order  string `json:"order"`
	Amount int    `json:"amount"`
	WorkMs int    `json:"workMs"`
}

// checkoutHandler is the REST service's handler: it pays through the RPC
// service and answers with the payment's id.
type checkoutHandler struct {
	client   *redis.Client
	id       string
	prefix   string
	payments testpb.PaymentsClient
}

// checkout counts its run (PREFIX:rest-runs) and itself as inside the
// process (PREFIX:rest-inside:<id>) while it runs, calls Pay with the
// request's context (the client interceptor derives the call's key from
// it, and a client that leaves cancels the call) and the caller's
// Authorization as authorization metadata, and answers 201 with
// {"order": ..., "payment": <the payment's id>}, counting an answer the
// RPC service replayed (PREFIX:rpc-replayed); a Pay that failed is
// counted by its code in PREFIX:rest-failed and answered 503, which the
// middleware does not keep, so the client's retry runs again.
func (h *checkoutHandler) checkout(w http.ResponseWriter, r *http.Request) {
	var req checkoutRequest
	if err := httpx.Parse(r, &req); err != nil {
		httpx.ErrorCtx(r.Context(), w, err)
		return
	}
	ctx := context.Background()
	inside := h.prefix + ":rest-inside:" + h.id
	h.client.Incr(ctx, inside)
	defer h.client.Decr(ctx, inside)
	h.client.Incr(ctx, h.prefix+":rest-runs")
	user := r.Header.Get("Authorization")
	call := metadata.AppendToOutgoingContext(r.Context(), "authorization", user)
	var header metadata.MD
	reply, err := h.payments.Pay(call, &testpb.PayRequest{Order: &testpb.Order{Id: req.Order}, UserId: user,
		Amount: float64(req.Amount), U32: uint32(req.WorkMs)}, grpc.Header(&header))
	if err != nil {
		why := payFailure(err)
		h.client.HIncrBy(ctx, h.prefix+":rest-failed", why, 1)
		httpx.WriteJsonCtx(r.Context(), w, http.StatusServiceUnavailable, map[string]string{"error": "payments: " + why})
		return
	}
	if strings.Join(header.Get(interceptor.ReplayedHeader), ",") == "true" {
		h.client.Incr(ctx, h.prefix+":rpc-replayed")
	}
	httpx.WriteJsonCtx(r.Context(), w, http.StatusCreated, map[string]string{"order": req.Order, "payment": reply.GetStatus()})
}

// payFailure names how a Pay failed: its gRPC code, "breaker" when
// zrpc's breaker refused it, and the code of a context error, which
// zrpc's breaker returns as it is when the context ended before the call.
func payFailure(err error) string {
	switch {
	case errors.Is(err, breaker.ErrServiceUnavailable):
		return "breaker"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.FromContextError(err).Code().String()
	}
	return status.Code(err).String()
}

// countAttempt, inside the client interceptor, sees each attempt of a
// logical call: it counts them by their code in PREFIX:rpc-attempts.
func (h *checkoutHandler) countAttempt(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	h.client.HIncrBy(context.Background(), h.prefix+":rpc-attempts", status.Code(err).String(), 1)
	return err
}

// endToEndRPCChild serves the Payments service on a zrpc server on
// 127.0.0.1:PORT, with the interceptor in replay mode keyed on the call's
// idempotency-key and authorization metadata (no Wait). It prints
// "listening" once a probe call reached its own server, and serves until
// its stdin closes or it is killed.
func endToEndRPCChild(client *redis.Client) int {
	id, prefix, port, expire := childEnvOf()
	lc := interceptor.LockConf{
		Prefix: prefix + ":rpc",
		Expire: expire,
		Mode:   interceptor.ModeReplay,
		Retain: 10 * time.Minute,
		Rules: []interceptor.LockRule{{Method: testpb.Payments_Pay_FullMethodName,
			Keys: []string{"metadata:" + interceptor.IdempotencyKeyMetadata, "metadata:authorization"}}},
	}
	lock, err := interceptor.UnaryServerInterceptor(lc, childStore())
	if err != nil {
		fmt.Println("failed", err)
		return 1
	}
	var c zrpc.RpcServerConf
	if err := conf.FillDefault(&c); err != nil {
		fmt.Println("failed", err)
		return 1
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c.Name, c.ListenOn = "zerolock-torture-e2e-rpc", addr
	c.DevServer.Enabled = false
	c.CpuThreshold = 0
	c.Log.Level, c.Log.Stat = "severe", false
	// The attempt's deadline, which the call carries, ends it; zrpc's own
	// timeout is past the longest attempt.
	c.Timeout = (10 * time.Second).Milliseconds()
	p := &e2ePayments{client: client, id: id, prefix: prefix}
	served := make(chan error, 1)
	server, err := zrpc.NewServer(c, func(s *grpc.Server) {
		testpb.RegisterPaymentsServer(s, p)
		served <- interceptor.CheckServed(s, lc)
	})
	if err != nil {
		fmt.Println("failed", err)
		return 1
	}
	logx.Disable()
	server.AddUnaryInterceptors(p.track, lock)
	failed := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				failed <- fmt.Errorf("%v", r)
			}
		}()
		server.Start()
	}()
	if err := probeOwn(addr, id, failed); err != nil {
		fmt.Println("failed", err)
		return 1
	}
	if err := <-served; err != nil {
		fmt.Println("failed", err)
		return 1
	}
	fmt.Println("listening")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// probeOwn calls addr until the server answering is the one named id
// (another process may have taken the port), or its start failed, for
// 10 s.
func probeOwn(addr, id string, failed <-chan error) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := testpb.NewPaymentsClient(conn)
	var last error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), e2eProbe, "1"), time.Second)
		reply, err := client.Pay(ctx, &testpb.PayRequest{})
		cancel()
		switch {
		case err == nil && reply.GetStatus() == id:
			return nil
		case err == nil:
			return fmt.Errorf("another server answers on %s: %q", addr, reply.GetStatus())
		}
		last = err
		select {
		case err := <-failed:
			return err
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("no answer on %s within 10s: %v", addr, last)
}

// e2ePayments is the RPC service: a payment whose side effect, recorded
// in Redis, must happen once per operation.
type e2ePayments struct {
	testpb.UnimplementedPaymentsServer
	client *redis.Client
	id     string // the process's name in payment ids
	prefix string
	seq    atomic.Int64
}

// effectDone is the context key of the flag Pay sets once its side effect
// happened, for track.
type effectDone struct{}

// payEffect is a payment's side effect, unless the parent closed the
// process's gate KEYS[1] to kill it (0): it counts the operation's
// payments in KEYS[2] (a count above 1 is also counted in KEYS[5]),
// records the payment's id ARGV[1] in KEYS[3], and counts the payment as
// not yet stored as the operation's result in KEYS[4], the process's
// window, which track decrements once the interceptor stored it.
var payEffect = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local n = redis.call('INCR', KEYS[2])
redis.call('RPUSH', KEYS[3], ARGV[1])
redis.call('INCR', KEYS[4])
if n > 1 then redis.call('INCR', KEYS[5]) end
return n`)

// Pay works for U32 ms, ignoring the call's context (a payment, once
// started, is not abandoned), then makes the payment "<process>-<seq>"
// of the operation "<user_id>:<order.id>" and answers with its id. When
// the process's gate is closed it makes no payment and never returns:
// the parent is about to kill the process.
func (p *e2ePayments) Pay(ctx context.Context, req *testpb.PayRequest) (*testpb.PayReply, error) {
	time.Sleep(time.Duration(req.GetU32()) * time.Millisecond)
	payment := fmt.Sprintf("%s-%d", p.id, p.seq.Add(1))
	op := req.GetUserId() + ":" + req.GetOrder().GetId()
	n, err := payEffect.Run(context.Background(), p.client, []string{p.prefix + ":gate:" + p.id,
		p.prefix + ":count:" + op, p.prefix + ":payments:" + op, p.prefix + ":window:" + p.id, p.prefix + ":twice"},
		payment).Int()
	if err != nil {
		p.client.Incr(context.Background(), p.prefix+":errors")
		fmt.Fprintf(os.Stderr, "e2erpc %s: payment %s of %s: %v\n", p.id, payment, op, err)
		return nil, status.Error(codes.Internal, "torture: the payment's effect failed")
	}
	if n == 0 {
		select {}
	}
	if done, ok := ctx.Value(effectDone{}).(*atomic.Bool); ok {
		done.Store(true)
	}
	return &testpb.PayReply{Status: payment}, nil
}

// track, outside the lock's interceptor, answers the probe with the
// process's name; it counts every other call that reached a server
// (PREFIX:rpc-calls) and those inside the process
// (PREFIX:rpc-inside:<id>), and closes the window of a payment made once
// the interceptor, having stored its result, returned.
func (p *e2ePayments) track(ctx context.Context, req any, _ *grpc.UnaryServerInfo,
	handler grpc.UnaryHandler) (any, error) {
	if md, _ := metadata.FromIncomingContext(ctx); len(md.Get(e2eProbe)) > 0 {
		return &testpb.PayReply{Status: p.id}, nil
	}
	bg := context.Background()
	p.client.Incr(bg, p.prefix+":rpc-calls")
	inside := p.prefix + ":rpc-inside:" + p.id
	p.client.Incr(bg, inside)
	defer p.client.Decr(bg, inside)
	var done atomic.Bool
	resp, err := handler(context.WithValue(ctx, effectDone{}, &done), req)
	if done.Load() {
		p.client.Decr(bg, p.prefix+":window:"+p.id)
	}
	return resp, err
}
