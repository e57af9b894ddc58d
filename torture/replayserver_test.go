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
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/rest"
	"github.com/zeromicro/go-zero/rest/httpx"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/middleware"
)

func init() {
	childRoles["replayserver"] = replayServerChild
}

// The routes of the replay workload: the same payment handler under a
// replay rule that refuses a concurrent duplicate at once, and under one
// that lets it wait for the first's result.
const (
	replayPath     = "/payments"
	replayWaitPath = "/payments/wait"
	replayWait     = 2 * time.Second
)

// replayConf is the middleware's configuration in every process of the
// replay workload: replay mode, Expire expire, renewal and MaxHold left at
// their defaults (renewed, 10 × Expire). The keys name the caller
// (header:Authorization) besides the idempotency key, as a replay rule
// must unless SharedKeys.
func replayConf(prefix string, expire time.Duration) middleware.LockConf {
	keys := []string{"header:Authorization", "header:Idempotency-Key"}
	return middleware.LockConf{
		Prefix: prefix,
		Expire: expire,
		Mode:   middleware.ModeReplay,
		Retain: 10 * time.Minute,
		Rules: []middleware.LockRule{
			{Method: http.MethodPost, Path: replayPath, Keys: keys},
			{Method: http.MethodPost, Path: replayWaitPath, Keys: keys, Wait: replayWait},
		},
	}
}

// replayServerChild serves the payment handler behind the middleware in
// replay mode on a go-zero rest.Server on 127.0.0.1:PORT, prints
// "listening" once the server accepted a connection of its own (or
// "failed ..." and exits), and serves until its stdin closes or it is
// killed. CHILD_ID names the process in the runs it records, PREFIX
// prefixes every Redis key it touches, EXPIRE is the rules' Expire.
func replayServerChild(client *redis.Client) int {
	id, prefix := os.Getenv("CHILD_ID"), os.Getenv("PREFIX")
	port, _ := strconv.Atoi(os.Getenv("PORT"))
	expire, _ := time.ParseDuration(os.Getenv("EXPIRE"))
	store := zredis.MustNewRedis(zredis.RedisConf{Host: os.Getenv("REDIS_ADDR"), Type: zredis.NodeType,
		NonBlock: true, DisableIdentity: true})
	m, err := middleware.NewLockMiddleware(replayConf(prefix+":lock", expire), store)
	if err != nil {
		fmt.Println("failed", err)
		return 1
	}
	// Its 30s timeout is far past the slowest handler (MaxHold).
	server, err := childRestServer("zerolock-torture-replay", port)
	if err != nil {
		fmt.Println("failed", err)
		return 1
	}
	server.Use(m.Handle)
	h := &paymentHandler{client: client, id: id, prefix: prefix}
	server.AddRoutes([]rest.Route{
		{Method: http.MethodPost, Path: replayPath, Handler: h.pay},
		{Method: http.MethodPost, Path: replayWaitPath, Handler: h.pay},
	})
	if err := startREST(server, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err != nil {
		fmt.Println("failed", err)
		return 1
	}
	fmt.Println("listening")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// startREST starts server in a goroutine and returns once it accepted a
// connection of its own (a dial alone could reach another process that
// took the port), or the error of its start.
func startREST(server *rest.Server, addr string) error {
	accepted := make(chan struct{}, 1)
	failed := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				failed <- fmt.Errorf("%v", r)
			}
		}()
		server.StartWithOpts(func(s *http.Server) {
			s.ConnState = func(net.Conn, http.ConnState) {
				select {
				case accepted <- struct{}{}:
				default:
				}
			}
		})
	}()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			select {
			case <-accepted:
				conn.Close()
				return nil
			case err := <-failed:
				conn.Close()
				return err
			case <-time.After(time.Second):
				conn.Close()
			}
			continue
		}
		select {
		case err := <-failed:
			return err
		case <-time.After(5 * time.Millisecond):
		}
	}
	return errors.New("did not start within 10s")
}

// paymentRequest is the body the parent sends: the work's duration is
// part of the request, so every duplicate of a key asks for the same.
type paymentRequest struct {
	Amount int `json:"amount"`
	WorkMs int `json:"workMs"`
}

// paymentHandler is the handler under test: a payment that must run once
// per idempotency key.
type paymentHandler struct {
	client *redis.Client
	id     string // the process's name in runs and markers
	prefix string
	seq    atomic.Int64
}

// markRun sets the key's running marker to ARGV[1] unless another run's
// marker is there. A marker whose owner (the process name before the '-')
// is in the killed set KEYS[2] is a run the parent SIGKILLed, whose marker
// nobody will delete: it is taken over (2). 0 is another live run inside:
// an overlap.
var markRun = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur then redis.call('SET', KEYS[1], ARGV[1]) return 1 end
if redis.call('SISMEMBER', KEYS[2], string.match(cur, '^[^-]+')) == 1 then
	redis.call('SET', KEYS[1], ARGV[1]) return 2
end
return 0`)

// unmarkRun deletes the key's running marker if it is still ARGV[1]'s.
var unmarkRun = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

// pay marks the key as running (a marker already set by a live run is an
// overlap: counted in PREFIX:violations and printed), records the run in
// PREFIX:runs:<key> as "<run> <start ns>", works for workMs ignoring the
// request's context (a payment, once started, is not abandoned), unmarks
// the key, counts a hold the middleware reported lost, and answers 201
// with {"paymentId": "<run>"}, the run being "<process>-<sequence>".
func (h *paymentHandler) pay(w http.ResponseWriter, r *http.Request) {
	var req paymentRequest
	if err := httpx.Parse(r, &req); err != nil {
		httpx.ErrorCtx(r.Context(), w, err)
		return
	}
	ctx := context.Background()
	key := r.Header.Get("Authorization") + ":" + r.Header.Get("Idempotency-Key")
	inside := h.prefix + ":inside:" + h.id
	h.client.Incr(ctx, inside)
	defer h.client.Decr(ctx, inside)
	run := fmt.Sprintf("%s-%d", h.id, h.seq.Add(1))
	marker := h.prefix + ":running:" + key
	marked, err := markRun.Run(ctx, h.client, []string{marker, h.prefix + ":killed"}, run).Int()
	switch {
	case err != nil:
		h.violation(ctx, fmt.Sprintf("run %s of key %s: mark: %v", run, key, err))
	case marked == 0:
		h.violation(ctx, fmt.Sprintf("run %s of key %s started while another live run was inside", run, key))
	case marked == 2:
		h.client.Incr(ctx, h.prefix+":taken-over")
	}
	h.client.RPush(ctx, h.prefix+":runs:"+key, fmt.Sprintf("%s %d", run, time.Now().UnixNano()))
	time.Sleep(time.Duration(req.WorkMs) * time.Millisecond)
	if n, err := unmarkRun.Run(ctx, h.client, []string{marker}, run).Int(); err != nil || n != 1 {
		h.violation(ctx, fmt.Sprintf("run %s of key %s: its marker was taken while it ran (%v)", run, key, err))
	}
	if cause := context.Cause(r.Context()); errors.Is(cause, zerolock.ErrLockLost) ||
		errors.Is(cause, zerolock.ErrRenewFailed) || errors.Is(cause, zerolock.ErrMaxHold) {
		h.client.Incr(ctx, h.prefix+":holds-lost")
		fmt.Fprintf(os.Stderr, "replayserver %s: run %s of key %s: hold lost: %v\n", h.id, run, key, cause)
	}
	httpx.WriteJsonCtx(r.Context(), w, http.StatusCreated, map[string]string{"paymentId": run})
}

// violation counts an overlap in PREFIX:violations and prints it.
func (h *paymentHandler) violation(ctx context.Context, what string) {
	h.client.Incr(ctx, h.prefix+":violations")
	fmt.Fprintf(os.Stderr, "replayserver %s: VIOLATION: %s\n", h.id, what)
}
