package hub

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock/internal/conn"
	"github.com/zerolock/zerolock/redislock/internal/gozero"
)

// The hub's unit tests: one process's subscription to a server, shared by
// the waiters of every key there (hub.go). The waiters' behaviour through
// AcquireWait is wait_test.go's and waiters_test.go's.

// hubOn returns the hub of a fresh redis-server for key, an admin client
// of that server, and key's release channel.
func hubOn(t *testing.T, key string) (*Hub, *redis.Client, string) {
	t.Helper()
	srv := redistest.Start(t)
	h := For(context.Background(), wrapped(srv.Client(t)), key)
	if h == nil {
		t.Fatal("no hub for a go-redis client of a real server")
	}
	return h, srv.Client(t), Channel(key)
}

// watching registers a waiter on ch, as a waiting acquire does, and
// closes it when the test ends if the test has not: a waiter left
// registered keeps the hub's connection and its goroutine.
func watching(t *testing.T, h *Hub, ch string) *Waiter {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w := h.Watch(ctx, ch)
	t.Cleanup(func() {
		if registered(w) {
			w.Close()
		}
	})
	return w
}

// registered reports whether w is among its channel's waiters.
func registered(w *Waiter) bool {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	if c, ok := w.hub.chans[w.channel]; ok {
		for _, other := range c.waiters {
			if other == w {
				return true
			}
		}
	}
	return false
}

// connected reports whether the hub holds a connection.
func connected(h *Hub) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ps != nil
}

// subscribers is the server's count of subscriptions to ch (shard
// subscriptions when sharded).
func subscribers(t *testing.T, admin *redis.Client, ch string, sharded bool) int64 {
	t.Helper()
	ctx := context.Background()
	var (
		counts map[string]int64
		err    error
	)
	if sharded {
		counts, err = admin.PubSubShardNumSub(ctx, ch).Result()
	} else {
		counts, err = admin.PubSubNumSub(ctx, ch).Result()
	}
	if err != nil {
		t.Fatal(err)
	}
	return counts[ch]
}

// eventually polls cond until it holds, failing the test after 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s: %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling the server's view
	}
}

// woken reports whether w is woken within 5 s, taking the wake.
func woken(w *Waiter) bool {
	select {
	case <-w.wake:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

// pending reports whether w has a wake it has not taken.
func pending(w *Waiter) bool { return len(w.wake) > 0 }

// publish announces a release on ch as release.lua does.
func publish(t *testing.T, admin *redis.Client, ch string, sharded bool, payload string) {
	t.Helper()
	var err error
	if sharded {
		err = admin.SPublish(context.Background(), ch, payload).Err()
	} else {
		err = admin.Publish(context.Background(), ch, payload).Err()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestHubSubscribesOncePerChannel: the waiters of every key on a server
// share one hub and one connection; a channel is subscribed, with the
// server's confirmation before watch returns, once however many waiters
// it has, unsubscribed when its last waiter leaves, and the connection
// closed with the last channel.
func TestHubSubscribesOncePerChannel(t *testing.T) {
	h, admin, a := hubOn(t, "zerolock-test:hub:a")
	b := Channel("zerolock-test:hub:b")
	if other := For(context.Background(), wrapped(h.client.(*redis.Client)), "zerolock-test:hub:b"); other != h {
		t.Fatal("two keys of one server got two hubs")
	}
	if !h.sharded {
		t.Fatal("the hub of a Redis 7 server does not use SSUBSCRIBE")
	}
	pubsubClients := func() int {
		list, err := admin.Do(context.Background(), "client", "list", "type", "pubsub").Text()
		if err != nil {
			t.Fatal(err)
		}
		if list = strings.TrimSpace(list); list == "" {
			return 0
		}
		return strings.Count(list, "\n") + 1 // a line per subscribed connection
	}

	a1 := watching(t, h, a)
	if n := subscribers(t, admin, a, true); n != 1 {
		t.Fatalf("%s has %d subscriptions once watch returned; want 1, confirmed", a, n)
	}
	a2, b1 := watching(t, h, a), watching(t, h, b)
	if na, nb := subscribers(t, admin, a, true), subscribers(t, admin, b, true); na != 1 || nb != 1 {
		t.Fatalf("subscriptions %d to %s and %d to %s; want one each, shared by the waiters", na, a, nb, b)
	}
	if n := pubsubClients(); n != 1 {
		t.Fatalf("%d subscribed connections; want the hub's one", n)
	}

	a1.Close()
	if n := subscribers(t, admin, a, true); n != 1 {
		t.Fatalf("%s has %d subscriptions while a waiter is left; want 1", a, n)
	}
	a2.Close()
	eventually(t, a+" unsubscribed after its last waiter left", func() bool { return subscribers(t, admin, a, true) == 0 })
	if !connected(h) {
		t.Fatal("the hub closed its connection while a channel has a waiter")
	}
	b1.Close()
	eventually(t, "the hub let its connection go with no channel left", func() bool { return !connected(h) })
	eventually(t, "the hub's connection closed", func() bool { return pubsubClients() == 0 })
}

// TestHubWakesOneWaiterPerRelease: a release wakes one waiter of its
// channel, the first without a wake pending, in arrival order; a writer's
// release (WakeAllPayload) wakes them all; a release of another channel
// wakes none.
func TestHubWakesOneWaiterPerRelease(t *testing.T) {
	h, admin, ch := hubOn(t, "zerolock-test:hub:wake")
	other := Channel("zerolock-test:hub:other")
	w1, w2, w3 := watching(t, h, ch), watching(t, h, ch), watching(t, h, other)

	publish(t, admin, ch, h.sharded, "released")
	if !woken(w1) {
		t.Fatal("the first waiter was not woken by a release")
	}
	if pending(w2) {
		t.Fatal("one release woke two waiters")
	}
	publish(t, admin, ch, h.sharded, "released")
	eventually(t, "the second release reached the first waiter, which has no wake pending", func() bool { return pending(w1) })
	if pending(w2) {
		t.Fatal("the second release woke the second waiter too")
	}
	publish(t, admin, ch, h.sharded, "released")
	if !woken(w2) {
		t.Fatal("the third release, with the first waiter's wake pending, did not wake the second")
	}
	if !woken(w1) {
		t.Fatal("the first waiter lost its pending wake")
	}

	publish(t, admin, ch, h.sharded, WakeAllPayload)
	if !woken(w1) || !woken(w2) {
		t.Fatal("a writer's release did not wake every waiter")
	}
	if pending(w3) {
		t.Fatal("a release woke a waiter of another channel")
	}
}

// TestHubIgnoresProbes: For's probe publishes on a key's release channel
// (where an ACL that lets releases through lets it through too); it wakes
// no waiter, so a probe from another process never sends one to Redis for
// nothing, nor takes the place of the next release's wake.
func TestHubIgnoresProbes(t *testing.T) {
	h, admin, ch := hubOn(t, "zerolock-test:hub:probe")
	marker := Channel("zerolock-test:hub:probe-marker")
	w1, w2, last := watching(t, h, ch), watching(t, h, ch), watching(t, h, marker)
	publish(t, admin, ch, h.sharded, probePayload)
	publish(t, admin, ch, h.sharded, "released")
	publish(t, admin, marker, h.sharded, "released")
	if !woken(last) { // one connection, in order: the two before are read
		t.Fatal("the marker's release did not wake its waiter")
	}
	if !pending(w1) {
		t.Fatal("the release did not reach the first waiter")
	}
	if pending(w2) {
		t.Fatal("the probe woke a waiter: the release after it went to a second one")
	}
}

// TestHubPassesOnUnusedWake: a waiter that leaves with a wake it did not
// use (it got the lock another way, or gave up) hands it to the next
// waiter, so no release is lost to its departure.
func TestHubPassesOnUnusedWake(t *testing.T) {
	h, admin, ch := hubOn(t, "zerolock-test:hub:handover")
	w1, w2 := watching(t, h, ch), watching(t, h, ch)
	publish(t, admin, ch, h.sharded, "released")
	eventually(t, "the release reached the first waiter", func() bool { return pending(w1) })
	w1.Close()
	if !pending(w2) {
		t.Fatal("the wake the first waiter left unused did not pass to the second")
	}
}

// TestHubWakesAllAfterReconnect: when the hub's connection breaks, every
// waiter is woken to try again (a release may have gone unheard), and the
// channels are subscribed again, so the next release is heard.
func TestHubWakesAllAfterReconnect(t *testing.T) {
	h, admin, a := hubOn(t, "zerolock-test:hub:reconnect-a")
	b := Channel("zerolock-test:hub:reconnect-b")
	wa, wb := watching(t, h, a), watching(t, h, b)

	if err := admin.ClientKillByFilter(context.Background(), "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	if !woken(wa) || !woken(wb) {
		t.Fatal("the waiters were not woken when the hub's connection broke")
	}
	eventually(t, "the channels subscribed again", func() bool {
		return subscribers(t, admin, a, h.sharded) == 1 && subscribers(t, admin, b, h.sharded) == 1
	})
	for pending(wa) {
		<-wa.wake // a broken retry may have woken it again
	}
	publish(t, admin, a, h.sharded, "released")
	if !woken(wa) {
		t.Fatal("a release after the reconnect did not wake its waiter")
	}
}

// TestHubWithoutShardedPubSub: on a server without SPUBLISH (Redis 6, and
// miniredis here) the hub subscribes with SUBSCRIBE, where the release
// script then publishes.
func TestHubWithoutShardedPubSub(t *testing.T) {
	mr := miniredis.RunT(t)
	client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	admin := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = admin.Close() })
	key := "zerolock-test:hub:plain"
	h := For(context.Background(), wrapped(client), key)
	if h == nil || h.sharded {
		t.Fatalf("hub %+v on a server without SPUBLISH; want one that uses SUBSCRIBE", h)
	}
	ch := Channel(key)
	w := watching(t, h, ch)
	if n := subscribers(t, admin, ch, false); n != 1 {
		t.Fatalf("%s has %d subscriptions once watch returned; want 1", ch, n)
	}
	publish(t, admin, ch, false, "released")
	if !woken(w) {
		t.Fatal("a PUBLISH did not wake the waiter")
	}
	w.Close()
	eventually(t, ch+" unsubscribed after its last waiter left", func() bool { return subscribers(t, admin, ch, false) == 0 })
}

// TestHubFor: stores that cannot carry releases get no hub (their waiters
// use back-off alone): a Ring, whose subscription is pinned to one shard.
// go-zero stores of one address share the hub of one subscriber client.
func TestHubFor(t *testing.T) {
	srv := redistest.Start(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": srv.Addr()}})
	t.Cleanup(func() { _ = ring.Close() })
	if h := For(context.Background(), wrapped(ring), "zerolock-test:hub:ring"); h != nil {
		t.Error("a Ring got a hub")
	}

	newStore := func() conn.Store {
		return gozero.New(zredis.MustNewRedis(zredis.RedisConf{Host: srv.Addr(), Type: zredis.NodeType, NonBlock: true, DisableIdentity: true}))
	}
	h1, h2 := For(context.Background(), wrapped(newStore()), "zerolock-test:hub:gz1"), For(context.Background(), wrapped(newStore()), "zerolock-test:hub:gz2")
	if h1 == nil || h1 != h2 {
		t.Fatalf("go-zero stores of one address got hubs %p and %p; want one", h1, h2)
	}
}

// wrapped is store probed, as a lock's constructor probes it.
func wrapped(store conn.Store) *conn.Conn {
	c := conn.Wrap(store)
	return &c
}

// silentServer is a listener that accepts connections and never answers,
// as a stalled server does; it and its connections close when t ends.
func silentServer(t *testing.T) string {
	t.Helper()
	ln := redistest.Listen(t)
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // read nothing, answer nothing
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-accepted
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// TestHubWatchBoundedByCtx: subscribing to a server that stalls (here, one
// that never answers the new connection's HELLO, which go-redis waits for
// up to its 3 s read timeout) holds the hub's worker, not its callers:
// Watch returns when its context ends, a second Watch of another channel
// does too, and Close returns at once, so a waiting acquire returns by its
// deadline (WithDeadlineGuard). Before, the subscription's I/O ran in
// Watch, under the lock every waiter of the hub takes.
func TestHubWatchBoundedByCtx(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: silentServer(t), MaxRetries: -1, DisableIdentity: true})
	t.Cleanup(func() { _ = client.Close() })
	h := newHub(client, true)
	watch := func(ch string) (*Waiter, time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		w := h.Watch(ctx, ch)
		return w, time.Since(start)
	}
	w1, took1 := watch(Channel("zerolock-test:hub:stall-a"))
	defer w1.Close()
	w2, took2 := watch(Channel("zerolock-test:hub:stall-b"))
	for i, took := range []time.Duration{took1, took2} {
		if took > confirmTimeout/2 {
			t.Fatalf("Watch %d took %v with a 100 ms context; want it back by the context's end", i+1, took)
		}
	}
	start := time.Now()
	w2.Close()
	if took := time.Since(start); took > confirmTimeout/2 {
		t.Fatalf("Close took %v while the server stalls; want it at once", took)
	}
}

// TestHubForProbesOnce: however many waiting calls find no hub for a
// server, one probe at a time asks it (each holds a pool connection until
// the server answers); calls that come while it is out return by their own
// contexts, and after it failed For answers nil for probeRetry without
// asking again.
func TestHubForProbesOnce(t *testing.T) {
	var probes atomic.Int64
	client := redis.NewClient(&redis.Options{Addr: silentServer(t), MaxRetries: -1, Protocol: 2, DisableIdentity: true,
		ReadTimeout: 300 * time.Millisecond})
	client.AddHook(countHook{"spublish", &probes})
	t.Cleanup(func() { _ = client.Close() })
	c := wrapped(client)
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		if h := For(ctx, c, "zerolock-test:hub:probe-once"); h != nil {
			t.Fatal("a server that never answered got a hub")
		}
		cancel()
	}
	eventually(t, "the probe was sent", func() bool { return probes.Load() >= 1 })
	if n := probes.Load(); n != 1 {
		t.Fatalf("%d probes of one server; want one at a time", n)
	}
	eventually(t, "the probe failed on the read timeout", func() bool {
		hubs.Lock()
		defer hubs.Unlock()
		p := hubs.probes[any(client)]
		return p != nil && !p.failedAt.IsZero()
	})
	if h := For(context.Background(), c, "zerolock-test:hub:probe-once"); h != nil {
		t.Fatal("a server whose probe failed got a hub")
	}
	if n := probes.Load(); n != 1 {
		t.Fatalf("For probed again %d times right after a failed probe; want it to wait probeRetry", n-1)
	}
}

// TestHubForAfterShortContext: a call whose context ends before the probe's
// answer gets no hub, and the next call gets the hub that answer made,
// without a probe of its own.
func TestHubForAfterShortContext(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	var probes atomic.Int64
	client.AddHook(countHook{"spublish", &probes})
	c := wrapped(client)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if h := For(ended, c, "zerolock-test:hub:short"); h != nil {
		t.Log("the probe answered before the ended context was seen")
	}
	if h := For(context.Background(), c, "zerolock-test:hub:short"); h == nil {
		t.Fatal("no hub for a real server after a call whose context had ended")
	}
	if n := probes.Load(); n != 1 {
		t.Fatalf("%d probes for two calls; want the first call's, shared", n)
	}
}

// countHook counts the commands named name.
type countHook struct {
	name string
	n    *atomic.Int64
}

func (countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == h.name {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestHubForBoundedByCtx: the first For of a server probes it; a server
// that does not answer (here a listener that never replies) holds the
// probe for confirmTimeout, but For returns nil when ctx ends, so a
// waiter's call returns by its deadline (WithDeadlineGuard) however long
// the server stalls.
func TestHubForBoundedByCtx(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // read nothing, answer nothing
		}
	}()
	client := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() {
		_ = client.Close()
		_ = ln.Close()
		<-accepted
		for _, c := range conns {
			_ = c.Close()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if h := For(ctx, wrapped(client), "zerolock-test:hub:silent"); h != nil {
		t.Error("a server that never answered got a hub")
	}
	if took := time.Since(start); took > confirmTimeout/2 {
		t.Fatalf("For took %v with a 100 ms context; want it back by the context's end", took)
	}
}

// fakeServer is one pub/sub connection's server whose subscription replies
// the test sends, in its own order and time: commands arrive on cmds, and
// reply writes RESP to the connection. Any other command is answered OK.
type fakeServer struct {
	cmds chan []string
	conn chan net.Conn
}

func startFakeServer(t *testing.T) (*fakeServer, string) {
	t.Helper()
	ln := redistest.Listen(t)
	f := &fakeServer{cmds: make(chan []string, 16), conn: make(chan net.Conn, 1)}
	served := make(chan struct{})
	go func() {
		defer close(served)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		f.conn <- c
		serve(c, func(cmd []string) { f.cmds <- cmd })
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		select {
		case c := <-f.conn:
			_ = c.Close()
		default:
		}
		<-served
	})
	return f, ln.Addr().String()
}

// serve answers c's commands until it closes: HELLO as Redis 5 does (go-redis
// goes on in RESP2), the subscription commands by sub, any other with OK.
func serve(c net.Conn, sub func(cmd []string)) {
	r := bufio.NewReader(c)
	for {
		cmd, err := readCommand(r)
		if err != nil {
			return
		}
		switch strings.ToLower(cmd[0]) {
		case "subscribe", "ssubscribe", "unsubscribe", "sunsubscribe":
			sub(cmd)
		case "hello":
			_, _ = c.Write([]byte("-ERR unknown command 'hello'\r\n"))
		default:
			_, _ = c.Write([]byte("+OK\r\n"))
		}
	}
}

// readCommand reads one RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return nil, err
	}
	cmd := make([]string, n)
	for i := range cmd {
		if _, err := r.ReadString('\n'); err != nil { // $len
			return nil, err
		}
		arg, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		cmd[i] = strings.TrimSuffix(arg, "\r\n")
	}
	return cmd, nil
}

// expect waits for the next subscription command and checks it.
func (f *fakeServer) expect(t *testing.T, kind, ch string) {
	t.Helper()
	select {
	case cmd := <-f.cmds:
		if len(cmd) != 2 || strings.ToLower(cmd[0]) != kind || cmd[1] != ch {
			t.Fatalf("the hub sent %q, want %s %s", cmd, kind, ch)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the hub did not send %s %s", kind, ch)
	}
}

// reply sends push replies of (kind, channel, payload) triples; a payload
// of "" is a subscription count of 1.
func (f *fakeServer) reply(t *testing.T, c net.Conn, triples ...string) {
	t.Helper()
	var b strings.Builder
	for i := 0; i < len(triples); i += 3 {
		kind, ch, payload := triples[i], triples[i+1], triples[i+2]
		fmt.Fprintf(&b, "*3\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(kind), kind, len(ch), ch)
		if payload == "" {
			b.WriteString(":1\r\n")
		} else {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(payload), payload)
		}
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
}

// TestHubStaleConfirmation: a waiter that gave up before its channel was
// confirmed left, and a new waiter of the channel came while the
// unsubscribe was due. The first subscription's reply, read before the
// unsubscribe's, does not confirm the new waiter's (the server then drops
// the channel, and a release before the new subscription would be lost
// to it); the unsubscribe's reply is the hub's own, not the server
// dropping a shard channel, so it wakes nobody; the new subscription's
// reply confirms. Before, the stale reply returned the new waiter's Watch
// while the server was about to leave the channel.
func TestHubStaleConfirmation(t *testing.T) {
	f, addr := startFakeServer(t)
	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { _ = client.Close() })
	h := newHub(client, true)
	ch, marker := Channel("zerolock-test:hub:stale"), Channel("zerolock-test:hub:stale-marker")

	watched := make(chan *Waiter, 2)
	watch := func(ch string, d time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		watched <- h.Watch(ctx, ch)
	}
	go watch(marker, 5*time.Second)
	f.expect(t, "ssubscribe", marker)
	var conn net.Conn
	select {
	case conn = <-f.conn:
		f.conn <- conn // for the cleanup
	case <-time.After(5 * time.Second):
		t.Fatal("no connection")
	}
	f.reply(t, conn, "ssubscribe", marker, "")
	m := <-watched
	defer m.Close()

	go watch(ch, 50*time.Millisecond)
	f.expect(t, "ssubscribe", ch)
	a := <-watched // gave up unconfirmed
	a.Close()
	f.expect(t, "sunsubscribe", ch)
	go watch(ch, 5*time.Second)
	f.expect(t, "ssubscribe", ch)

	f.reply(t, conn, "ssubscribe", ch, "", "sunsubscribe", ch, "", "smessage", marker, "released")
	if !woken(m) { // one connection, in order: the replies before it are read
		t.Fatal("the marker's release did not wake its waiter")
	}
	h.mu.Lock()
	b, confirmed := h.chans[ch].waiters[0], h.chans[ch].confirmed
	h.mu.Unlock()
	select {
	case <-confirmed:
		t.Fatal("the reply to a subscription since left confirmed the new waiter's")
	default:
	}
	if pending(b) {
		t.Fatal("the reply to the hub's own unsubscribe woke the new waiter, as if the server had dropped the channel")
	}
	f.reply(t, conn, "ssubscribe", ch, "")
	select {
	case w := <-watched:
		w.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("the new subscription's reply did not confirm it")
	}
}

// TestHubSubscribeUnsent: a hub whose first connection cannot be opened
// (the server is down) asks again until its channel is subscribed and
// confirmed, so the waiters that come once the server is back are woken,
// not left to their 2 s timeout and back-off.
func TestHubSubscribeUnsent(t *testing.T) {
	srv := redistest.Start(t)
	var down atomic.Bool
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DisableIdentity: true,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if down.Load() {
				return nil, errors.New("test: the server is down")
			}
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}})
	t.Cleanup(func() { _ = client.Close() })
	h := newHub(client, true)
	ch := Channel("zerolock-test:hub:unsent")

	down.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	w := h.Watch(ctx, ch) // not confirmed: the server cannot be reached
	cancel()
	defer w.Close()
	down.Store(false)
	eventually(t, ch+" subscribed once the server is back", func() bool {
		return subscribers(t, srv.Client(t), ch, true) == 1
	})
	h.mu.Lock()
	confirmed := h.chans[ch].confirmed
	h.mu.Unlock()
	select {
	case <-confirmed:
	case <-time.After(5 * time.Second):
		t.Fatal("the subscription the server has was never confirmed")
	}
}

// connServer accepts any number of pub/sub connections, numbered from 1 in
// the order they come, and has sub answer each subscription command.
func connServer(t *testing.T, sub func(n int32, c net.Conn, cmd []string)) (addr string, conns *atomic.Int32) {
	t.Helper()
	ln := redistest.Listen(t)
	conns = new(atomic.Int32)
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	var open sync.Map // the connections still served, closed at cleanup
	t.Cleanup(func() {
		open.Range(func(c, _ any) bool { _ = c.(net.Conn).Close(); return true })
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := conns.Add(1)
			open.Store(c, true)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(c, func(cmd []string) { sub(n, c, cmd) })
			}()
		}
	}()
	return ln.Addr().String(), conns
}

// confirmReply is a server's confirmation of SSUBSCRIBE ch.
func confirmReply(ch string) string {
	return fmt.Sprintf("*3\r\n$10\r\nssubscribe\r\n$%d\r\n%s\r\n:1\r\n", len(ch), ch)
}

// watchOn makes a sharded hub on addr with a client that never resends and
// registers a waiter on ch, closed when the test ends.
func watchOn(t *testing.T, addr, ch string) (*Hub, *Waiter) {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { _ = client.Close() })
	h := newHub(client, true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w := h.Watch(ctx, ch)
	t.Cleanup(w.Close)
	return h, w
}

// isConfirmed reports whether the hub's subscription of ch is confirmed now.
func isConfirmed(h *Hub, ch string) bool {
	h.mu.Lock()
	confirmed := h.chans[ch].confirmed
	h.mu.Unlock()
	select {
	case <-confirmed:
		return true
	default:
		return false
	}
}

// TestHubReopensAfterRedirect: a subscription answered with MOVED (a
// cluster node that no longer serves the slot, where a stale slot map sent
// the connection) is asked again on a connection opened anew, which the
// cluster client routes to the slot's node now. Before, the hub kept the
// refused connection, and its waiters were never confirmed.
func TestHubReopensAfterRedirect(t *testing.T) {
	addr, conns := connServer(t, func(n int32, c net.Conn, cmd []string) {
		if n == 1 {
			_, _ = fmt.Fprintf(c, "-MOVED 1 127.0.0.1:1\r\n")
		} else {
			_, _ = c.Write([]byte(confirmReply(cmd[1])))
		}
	})
	ch := Channel("zerolock-test:hub:moved")
	h, _ := watchOn(t, addr, ch)
	if !isConfirmed(h, ch) {
		t.Fatal("the subscription was never confirmed after the server redirected it")
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2: the redirected one and the one opened anew", n)
	}
}

// TestHubReopensAfterDrop: the server drops a shard channel a waiter needs
// (a cluster node whose slot moved sends SUNSUBSCRIBE): the hub asks for
// it on a new connection, not on the old one (which the node would answer
// with MOVED), the waiter is sent to try at the drop and again at the new
// confirmation, and replies from the old connection count for nothing.
func TestHubReopensAfterDrop(t *testing.T) {
	first := make(chan net.Conn, 1)
	subs := make(chan int32, 4)
	addr, conns := connServer(t, func(n int32, c net.Conn, cmd []string) {
		subs <- n
		if n == 1 {
			first <- c
		}
		_, _ = c.Write([]byte(confirmReply(cmd[1])))
	})
	ch := Channel("zerolock-test:hub:dropped")
	h, w := watchOn(t, addr, ch)
	old := <-first
	if n := <-subs; n != 1 {
		t.Fatalf("first subscription on connection %d", n)
	}
	if !isConfirmed(h, ch) {
		t.Fatal("the first subscription was not confirmed")
	}

	_, _ = fmt.Fprintf(old, "*3\r\n$12\r\nsunsubscribe\r\n$%d\r\n%s\r\n:0\r\n", len(ch), ch)
	if !woken(w) {
		t.Fatal("the drop did not send the waiter to try")
	}
	select {
	case n := <-subs:
		if n != 2 {
			t.Fatalf("the channel was asked for again on connection %d, want a new one (2)", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the dropped channel was not asked for again")
	}
	if !woken(w) {
		t.Fatal("the new confirmation did not send the waiter to try")
	}
	if !isConfirmed(h, ch) {
		t.Fatal("the new subscription was not confirmed")
	}
	h.mu.Lock()
	sub := h.subs[ch]
	h.mu.Unlock()
	if !sub || conns.Load() != 2 {
		t.Errorf("subscribed %v on %d connections, want true on 2", sub, conns.Load())
	}
	// A late reply on the old connection is not read as the new one's.
	_, _ = fmt.Fprintf(old, "*3\r\n$12\r\nsunsubscribe\r\n$%d\r\n%s\r\n:0\r\n", len(ch), ch)
	if pending(w) {
		t.Error("a reply on the closed connection woke the waiter")
	}
}
