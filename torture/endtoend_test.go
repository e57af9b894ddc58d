package torture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/testing/faultproxy"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/middleware"
)

// The end-to-end workload's shape.
const (
	e2eProcesses = 2           // REST processes, and as many RPC processes
	e2eExpire    = time.Second // both replay rules' Expire
	e2eUsers     = 8
	e2eSlowShare = 25                      // one payment in 25 outlasts an attempt (AttemptTimeout 2 s)
	e2eSlow      = 2500 * time.Millisecond // its work
	e2eKeyLimit  = time.Minute             // an operation not answered 2xx by then fails the test
)

// TestExactlyOnceEndToEnd (issue 27): clients → REST → RPC, each hop
// through a faultproxy, with both tiers' processes SIGKILLed and replaced.
//
// Two REST processes (go-zero rest.Server, the middleware in replay mode
// keyed on [header:Authorization, header:Idempotency-Key], Expire 1 s,
// Wait 2 s: a client's duplicate waits for the first request's answer)
// serve POST /checkout, whose handler pays through a zrpc client with
// MustUnaryClientInterceptor (8 attempts, AttemptTimeout 2 s, zrpc
// Timeout 8 s) to two RPC processes (zrpc server, the interceptor in
// replay mode keyed on [metadata:idempotency-key, metadata:authorization],
// Expire 1 s, no Wait: a duplicate attempt is refused with a RetryInfo,
// which the client interceptor retries). The checkout handler sets no key
// of its own: the client interceptor derives one from the checkout being
// served, so a checkout run again (its answer lost, its process killed)
// pays with the same key. The payment works 10-150 ms (1 in 25: 2.5 s,
// past AttemptTimeout), ignoring its context, then makes its side effect
// in Redis: INCR of the operation's counter and the payment's id pushed
// on its list.
//
// Workers run logical operations: a new Idempotency-Key, sent by one
// client (one operation in 4: 2-3 at once), each retrying on random REST
// proxies until a 2xx, within a minute. Every proxy resets its
// connections every 0.5-2 s (an answer in flight is lost: on the client
// hop the checkout's, on the RPC hop the payment's) and adds 0-20 ms of
// latency; every few seconds a REST or an RPC process, in turn, is
// SIGKILLed (a REST one with a checkout inside when there is one) and
// replaced on a port never used before, and its proxy retargeted.
//
// An RPC process is killed only once no payment in it is between its
// side effect and its stored result (its gate closed first: a payment
// that reaches its effect then waits to be killed without making it). A
// crash in that window would make any idempotency layer run the payment
// again: only a handler that commits its effect and its result together
// closes it. RPC processes are killed with payments inside before their
// effect, with calls on the wire and results being stored or replayed.
//
// Pass: (1) every operation's payment was made exactly once (its counter
// is 1, its list one id, no counter ever went past 1, and no payment was
// made for an operation no client sent); (2) every 2xx of an operation,
// to each of its clients, is the same body, naming that payment; (3)
// every operation got its 2xx within its minute; (4) the clients saw
// nothing but 201, 409 with Retry-After and the checkout's own 503 (a
// payment that failed), and connection errors only on a proxy that reset
// or whose process was killed while the request was out; the checkouts
// saw payments fail only with Unavailable, DeadlineExceeded, Canceled,
// Aborted or zrpc's breaker, and the attempts ended with nothing else.
func TestExactlyOnceEndToEnd(t *testing.T) {
	target, limit, workers, killEvery := 0, 3*time.Second, 6, time.Second
	if long() {
		target, limit, workers, killEvery = 10000, 4*time.Minute, 24, 5*time.Second
	}
	srv := redistest.Start(t)
	w := &e2eWorkload{
		t:      t,
		admin:  srv.Client(t),
		prefix: "torture:" + t.Name(),
		client: &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
	}
	w.env = []string{"REDIS_ADDR=" + srv.Addr(), "EXPIRE=" + e2eExpire.String(), "PREFIX=" + w.prefix}
	t.Cleanup(w.client.CloseIdleConnections)
	t.Cleanup(w.stopAll)
	w.rpc = w.startTier("e2erpc", "r")
	rpcAddrs := make([]string, len(w.rpc))
	for i, s := range w.rpc {
		rpcAddrs[i] = s.proxy.Addr()
	}
	w.env = append(w.env, "RPC_ADDRS="+strings.Join(rpcAddrs, ","))
	w.rest = w.startTier("e2erest", "h")

	start := time.Now()
	stopBy := start.Add(limit)
	faultsDone := make(chan struct{})
	var faults sync.WaitGroup
	for i, s := range append(append([]*e2eSlot{}, w.rest...), w.rpc...) {
		faults.Add(1)
		go func() {
			defer faults.Done()
			w.injectFaults(s, rand.New(rand.NewPCG(27, uint64(100+i))), faultsDone)
		}()
	}
	var started atomic.Int64
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(27, uint64(g)))
			for n := 0; time.Now().Before(stopBy) && (target == 0 || started.Add(1) <= int64(target)); n++ {
				w.runOp(r, g, n)
			}
		}()
	}
	workersDone := make(chan struct{})
	go func() {
		wg.Wait()
		close(workersDone)
	}()
	r := rand.New(rand.NewPCG(27, 27))
	next := start.Add(killEvery / 2)
kills:
	for kill := 0; ; kill++ {
		select {
		case <-workersDone:
			break kills
		case <-time.After(time.Until(next)):
		}
		if next.After(stopBy) {
			<-workersDone
			break kills
		}
		if kill%2 == 0 {
			w.killREST(r)
		} else {
			w.killRPC(r)
		}
		next = next.Add(killEvery)
	}
	took := time.Since(start)
	close(faultsDone)
	faults.Wait()
	w.stopAll()
	if target > 0 && len(w.ops) < target {
		t.Errorf("only %d operations within %v, want %d", len(w.ops), limit, target)
	}
	if w.restKills.Load() == 0 || w.rpcKills.Load() == 0 {
		t.Errorf("%d REST and %d RPC processes killed: want both tiers' processes killed during the run",
			w.restKills.Load(), w.rpcKills.Load())
	}
	w.check()
	record(t, fmt.Sprintf("clients → faultproxy → %d rest.Server processes (middleware, replay, Expire %v, Wait %v) → "+
		"zrpc client with the client interceptor (%d attempts, backoff %v, AttemptTimeout %v, Timeout %v) → faultproxy → "+
		"%d zrpc server processes (interceptor, replay, Expire %v, no Wait); payment 10-150ms, 1 in %d at %v, its effect an INCR in Redis; "+
		"proxies reset every 0.5-2s with 0-20ms latency; a REST or RPC process SIGKILLed every %v in turn, replaced, proxy retargeted; "+
		"%d workers, 1 operation in 4 sent by 2-3 clients at once, each retrying until a 2xx",
		e2eProcesses, e2eExpire, e2eRESTWait, e2eClientConf().MaxAttempts, e2eClientConf().Backoff, e2eClientConf().AttemptTimeout,
		e2eRPCTimeout, e2eProcesses, e2eExpire, e2eSlowShare, e2eSlow, killEvery, workers),
		w.figures(took))
}

// e2eWorkload is the parent's side of the end-to-end torture: the two
// tiers, the operations sent and every 2xx they got.
type e2eWorkload struct {
	t      *testing.T
	admin  *redis.Client
	prefix string
	env    []string
	client *http.Client

	rest, rpc []*e2eSlot
	nextID    atomic.Int64

	mu  sync.Mutex
	all []*e2eSlot // every slot started, for stopAll
	ops []*e2eOp

	requests, conflicts, unavailable, connErrors atomic.Int64
	restKills, restInside, rpcKills, rpcInside   atomic.Int64
	restResets, rpcResets                        atomic.Int64

	// read from Redis by check, for figures
	payments, restRuns, rpcCalls, rpcReplayed int64
	restFailed, rpcAttempts                   map[string]string
}

// An e2eSlot is one process of a tier behind its fault proxy; a process
// killed is replaced in its slot, and the proxy retargeted.
type e2eSlot struct {
	role, name string
	proxy      *faultproxy.Proxy

	mu   sync.Mutex
	proc *serverProcess

	faulting  atomic.Int32 // resets and kills under way
	lastFault atomic.Int64 // when the last one ended, in Unix ns
}

// e2eOp is one logical operation: an idempotency key, and the 2xx its
// clients got.
type e2eOp struct {
	user, idem, order, body string
	clients                 int

	mu       sync.Mutex
	answers  []e2eAnswer
	answered time.Duration // when its last 2xx arrived, from its start
}

// e2eAnswer is one client's 2xx.
type e2eAnswer struct {
	status   int
	body     string
	replayed bool
	lost     bool // the client had lost an answer (a connection error) before
}

// startTier starts e2eProcesses processes in role, named name<n>, at
// once, each behind its proxy. A process that does not start ends the
// test.
func (w *e2eWorkload) startTier(role, name string) []*e2eSlot {
	procs := make([]*serverProcess, e2eProcesses)
	errs := make([]error, e2eProcesses)
	var wg sync.WaitGroup
	for i := range procs {
		id := fmt.Sprintf("%s%d", name, w.nextID.Add(1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			procs[i], errs[i] = startServerChild(role, id, w.env)
		}()
	}
	wg.Wait()
	var slots []*e2eSlot
	for _, p := range procs {
		if p != nil {
			slots = append(slots, &e2eSlot{role: role, name: name, proxy: faultproxy.Start(w.t, p.addr), proc: p})
		}
	}
	w.mu.Lock()
	w.all = append(w.all, slots...)
	w.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		w.t.Fatal(err)
	}
	return slots
}

// current returns the slot's process.
func (s *e2eSlot) current() *serverProcess {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// beginFault and endFault bracket a fault of the slot (a reset, a kill
// until the proxy is retargeted), for faultedSince.
func (s *e2eSlot) beginFault() { s.faulting.Add(1) }

func (s *e2eSlot) endFault() {
	s.lastFault.Store(time.Now().UnixNano())
	s.faulting.Add(-1)
}

// faultedSince reports whether a fault of the slot is under way or ended
// after sent: a connection error of a request sent at sent is expected
// only then.
func (s *e2eSlot) faultedSince(sent time.Time) bool {
	return s.faulting.Load() > 0 || s.lastFault.Load() >= sent.UnixNano()
}

// replace SIGKILLs the slot's process, starts another on a new port and
// retargets the proxy to it. A replacement that does not start fails the
// test, which goes on with the processes left (its slot stays faulted).
func (w *e2eWorkload) replace(s *e2eSlot) {
	s.beginFault()
	s.current().kill()
	p, err := startServerChild(s.role, fmt.Sprintf("%s%d", s.name, w.nextID.Add(1)), w.env)
	if err != nil {
		w.t.Errorf("replace a %s process: %v", s.role, err)
		return
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	s.proxy.Retarget(p.addr)
	s.endFault()
}

// killREST kills a REST process with a checkout inside (any, if none had
// one within a second), and replaces it.
func (w *e2eWorkload) killREST(r *rand.Rand) {
	ctx := context.Background()
	order := r.Perm(len(w.rest))
	keys := make([]string, len(order))
	for j, i := range order {
		keys[j] = w.prefix + ":rest-inside:" + w.rest[i].current().id
	}
	victim := w.rest[order[0]]
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if j := firstCounting(ctx, w.admin, keys); j >= 0 {
			victim = w.rest[order[j]]
			break
		}
	}
	id := victim.current().id
	w.replace(victim)
	n, _ := w.admin.Get(ctx, w.prefix+":rest-inside:"+id).Int64()
	w.restKills.Add(1)
	w.restInside.Add(n)
}

// killRPC closes a random RPC process's gate, waits until none of its
// payments is between its effect and its stored result, kills it and
// replaces it.
func (w *e2eWorkload) killRPC(r *rand.Rand) {
	ctx := context.Background()
	s := w.rpc[r.IntN(len(w.rpc))]
	id := s.current().id
	if err := w.admin.Set(ctx, w.prefix+":gate:"+id, 1, 0).Err(); err != nil {
		w.t.Errorf("close the gate of %s: %v", id, err)
		return
	}
	window := w.prefix + ":window:" + id
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		n, err := w.admin.Get(ctx, window).Int64()
		if (err == nil || errors.Is(err, redis.Nil)) && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			w.t.Errorf("%s: payments made and not stored for 5s (%d, %v)", id, n, err)
			return
		}
	}
	w.replace(s)
	n, _ := w.admin.Get(ctx, w.prefix+":rpc-inside:"+id).Int64()
	w.rpcKills.Add(1)
	w.rpcInside.Add(n)
}

// injectFaults resets the slot's proxy every 0.5-2 s and, every other
// time, sets its latency to 0-20 ms, until done.
func (w *e2eWorkload) injectFaults(s *e2eSlot, r *rand.Rand, done <-chan struct{}) {
	latencies := []time.Duration{0, 0, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond}
	resets := &w.restResets
	if s.role == "e2erpc" {
		resets = &w.rpcResets
	}
	for i := 0; ; i++ {
		select {
		case <-done:
			s.proxy.SetLatency(0)
			return
		case <-time.After(time.Duration(500+r.IntN(1500)) * time.Millisecond):
		}
		s.beginFault()
		s.proxy.Reset()
		s.endFault()
		resets.Add(1)
		if i%2 == 0 {
			s.proxy.SetLatency(latencies[r.IntN(len(latencies))])
		}
	}
}

// stopAll ends every process still running (not a kill of the test).
func (w *e2eWorkload) stopAll() {
	w.mu.Lock()
	procs := make([]*serverProcess, len(w.all))
	for i, s := range w.all {
		procs[i] = s.current()
	}
	w.mu.Unlock()
	stopServers(procs)
}

// runOp runs one operation: a new key sent by 1 client, or (1 in 4) 2-3
// at once, each until a 2xx.
func (w *e2eWorkload) runOp(r *rand.Rand, worker, n int) {
	work := time.Duration(10+r.IntN(141)) * time.Millisecond
	if r.IntN(e2eSlowShare) == 0 {
		work = e2eSlow
	}
	op := &e2eOp{
		user:    fmt.Sprintf("Bearer u%d", r.IntN(e2eUsers)),
		idem:    fmt.Sprintf("k-%d-%d", worker, n),
		order:   fmt.Sprintf("o-%d-%d", worker, n),
		clients: 1,
	}
	op.body = fmt.Sprintf(`{"order":%q,"amount":%d,"workMs":%d}`, op.order, 1+r.IntN(1000), work.Milliseconds())
	if r.IntN(4) == 0 {
		op.clients = 2 + r.IntN(2)
	}
	w.mu.Lock()
	w.ops = append(w.ops, op)
	w.mu.Unlock()
	start := time.Now()
	var wg sync.WaitGroup
	for range op.clients {
		seed := r.Uint64()
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.send(op, start, rand.New(rand.NewPCG(seed, 27)))
		}()
	}
	wg.Wait()
}

// send is one client of op: it sends op to random REST proxies until it
// gets a 2xx, retrying a 409 or the checkout's 503 after 50-150 ms and a
// connection error after 20-80 ms.
func (w *e2eWorkload) send(op *e2eOp, start time.Time, r *rand.Rand) {
	lost := false
	for time.Now().Before(start.Add(e2eKeyLimit)) {
		s := w.rest[r.IntN(len(w.rest))]
		req, err := http.NewRequest(http.MethodPost, "http://"+s.proxy.Addr()+e2ePath, strings.NewReader(op.body))
		if err != nil {
			w.t.Error(err)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", op.user)
		req.Header.Set("Idempotency-Key", op.idem)
		sent := time.Now()
		w.requests.Add(1)
		resp, err := w.client.Do(req)
		var body []byte
		if err == nil {
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				w.t.Errorf("key %s: no answer within the client's %v: %v", op.idem, w.client.Timeout, err)
				return
			}
			if !s.faultedSince(sent) {
				w.t.Errorf("key %s: a connection error with no reset nor kill on its way: %v", op.idem, err)
				return
			}
			w.connErrors.Add(1)
			lost = true
			time.Sleep(time.Duration(20+r.IntN(60)) * time.Millisecond)
			continue
		}
		switch {
		case resp.StatusCode/100 == 2:
			op.mu.Lock()
			op.answers = append(op.answers, e2eAnswer{status: resp.StatusCode, body: string(body), lost: lost,
				replayed: resp.Header.Get(middleware.ReplayedHeader) == "true"})
			op.answered = max(op.answered, time.Since(start))
			op.mu.Unlock()
			return
		case resp.StatusCode == http.StatusConflict:
			if resp.Header.Get("Retry-After") == "" {
				w.t.Errorf("key %s: a 409 without Retry-After: %s", op.idem, body)
				return
			}
			w.conflicts.Add(1)
		case resp.StatusCode == http.StatusServiceUnavailable && strings.HasPrefix(string(body), `{"error":"payments: `):
			w.unavailable.Add(1)
		default:
			w.t.Errorf("key %s: answered %d: %s", op.idem, resp.StatusCode, body)
			return
		}
		time.Sleep(time.Duration(50+r.IntN(100)) * time.Millisecond)
	}
	w.t.Errorf("key %s: no 2xx within %v", op.idem, e2eKeyLimit)
}

// check reads what the processes left in Redis and checks every
// operation against it.
func (w *e2eWorkload) check() {
	t, ctx := w.t, context.Background()
	counter := func(name string) int64 { return readCounter(t, w.admin, w.prefix+":"+name) }
	if n := counter("twice"); n != 0 {
		t.Errorf("%d payments were made for an operation already paid", n)
	}
	if n := counter("errors"); n != 0 {
		t.Errorf("%d payments failed to record their effect (see the log)", n)
	}
	w.restRuns, w.rpcCalls, w.rpcReplayed = counter("rest-runs"), counter("rpc-calls"), counter("rpc-replayed")
	var err error
	if w.restFailed, err = w.admin.HGetAll(ctx, w.prefix+":rest-failed").Result(); err != nil {
		t.Errorf("read rest-failed: %v", err)
	}
	for code := range w.restFailed {
		switch code {
		case "Unavailable", "DeadlineExceeded", "Canceled", "Aborted", "breaker":
		default:
			t.Errorf("checkouts saw payments fail with %s (%s times)", code, w.restFailed[code])
		}
	}
	if w.rpcAttempts, err = w.admin.HGetAll(ctx, w.prefix+":rpc-attempts").Result(); err != nil {
		t.Errorf("read rpc-attempts: %v", err)
	}
	for code := range w.rpcAttempts {
		switch code {
		case "OK", "Unavailable", "DeadlineExceeded", "Canceled", "Aborted":
		default:
			t.Errorf("payment attempts ended with %s (%s times)", code, w.rpcAttempts[code])
		}
	}
	// Every payment made is of an operation sent.
	var cursor uint64
	for {
		keys, next, err := w.admin.Scan(ctx, cursor, w.prefix+":count:*", 1000).Result()
		if err != nil {
			t.Fatal(err)
		}
		w.payments += int64(len(keys))
		if cursor = next; cursor == 0 {
			break
		}
	}
	if w.payments != int64(len(w.ops)) {
		t.Errorf("payments were made for %d operations, %d were sent", w.payments, len(w.ops))
	}
	failed := 0
	for _, op := range w.ops {
		if !w.checkOp(ctx, op) {
			if failed++; failed == 10 {
				t.Errorf("the later operations are not checked: 10 failed")
				return
			}
		}
	}
}

// checkOp checks one operation's payment and answers, and reports whether
// they pass (the first failure is reported).
func (w *e2eWorkload) checkOp(ctx context.Context, op *e2eOp) bool {
	t := w.t
	name := op.user + ":" + op.order
	count, err := w.admin.Get(ctx, w.prefix+":count:"+name).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Errorf("key %s: %v", op.idem, err)
		return false
	}
	payments, err := w.admin.LRange(ctx, w.prefix+":payments:"+name, 0, -1).Result()
	if err != nil {
		t.Errorf("key %s: %v", op.idem, err)
		return false
	}
	if count != 1 || len(payments) != 1 {
		t.Errorf("key %s: paid %d times (payments %v), want once", op.idem, count, payments)
		return false
	}
	if len(op.answers) != op.clients {
		t.Errorf("key %s: %d of its %d clients got a 2xx", op.idem, len(op.answers), op.clients)
		return false
	}
	want := fmt.Sprintf(`{"order":%q,"payment":%q}`, op.order, payments[0])
	for _, a := range op.answers {
		if a.status != http.StatusCreated || a.body != want {
			t.Errorf("key %s: a 2xx %d %s; want 201 %s", op.idem, a.status, a.body, want)
			return false
		}
	}
	return true
}

// figures is the report's figures of a run that took took.
func (w *e2eWorkload) figures(took time.Duration) string {
	var originals, replays, lostReplayed, duplicated int
	var slowest time.Duration
	for _, op := range w.ops {
		if op.clients > 1 {
			duplicated++
		}
		slowest = max(slowest, op.answered)
		for _, a := range op.answers {
			switch {
			case !a.replayed:
				originals++
			case a.lost:
				replays++
				lostReplayed++
			default:
				replays++
			}
		}
	}
	return fmt.Sprintf("%d operations (%d with concurrent clients), %d requests in %v; %d payments made, each once; "+
		"%d original 2xx, %d replays (%d to a client that had lost an answer), %d 409s, %d 503s (of %d checkouts whose payment failed %v: "+
		"the others' answer reached no client, gone with a reset or a kill, which also cancels the call), "+
		"%d connection errors; slowest operation %v; %d checkout runs; RPC: %d attempts %v, %d calls reached a server, "+
		"%d answers replayed to a checkout; %d REST kills with %d checkouts inside, %d RPC kills with %d calls inside; "+
		"%d resets on the client hop, %d on the RPC hop",
		len(w.ops), duplicated, w.requests.Load(), took.Round(100*time.Millisecond), w.payments,
		originals, replays, lostReplayed, w.conflicts.Load(), w.unavailable.Load(), sumCounts(w.restFailed), sortedCounts(w.restFailed),
		w.connErrors.Load(), slowest.Round(10*time.Millisecond), w.restRuns, sumCounts(w.rpcAttempts), sortedCounts(w.rpcAttempts),
		w.rpcCalls, w.rpcReplayed, w.restKills.Load(), w.restInside.Load(), w.rpcKills.Load(), w.rpcInside.Load(),
		w.restResets.Load(), w.rpcResets.Load())
}

// sortedCounts spells a Redis hash of counts as "(a 1, b 2)", in name
// order.
func sortedCounts(counts map[string]string) string {
	names := make([]string, 0, len(counts))
	for name := range counts {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = name + " " + counts[name]
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// sumCounts sums a Redis hash of counts.
func sumCounts(counts map[string]string) int64 {
	var n int64
	for _, c := range counts {
		v, _ := strconv.ParseInt(c, 10, 64)
		n += v
	}
	return n
}
