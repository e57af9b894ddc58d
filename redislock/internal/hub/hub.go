// Package hub carries releases to waiting acquires: one subscription per
// process and server (or cluster slot), shared by the waiters of every
// key there, each key's release channel subscribed once.
package hub

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/redislock/internal/conn"
	"github.com/zerolock/zerolock/redislock/internal/gozero"
	"github.com/zerolock/zerolock/redislock/internal/slot"
)

// Channel is the channel a lock's release is announced on: a shard
// channel in the key's slot, so the release script may publish to it on
// Redis Cluster.
func Channel(key string) string {
	return slot.Companion(key, ChannelSuffix)
}

// ChannelSuffix names a key's release channel (slot.Companion).
const ChannelSuffix = "zerolock.released"

// pubsubClient is what a store needs for waiters to be woken by releases:
// go-redis's *Client and *ClusterClient have it.
type pubsubClient interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
	SSubscribe(ctx context.Context, channels ...string) *redis.PubSub
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// reopenPause is how long the worker waits for the cluster client's reload
// of its slot map before it opens the connection again; it doubles with each
// reopening until a confirmation, to 1.6 s, so that a client that cannot be
// routed (a node client on a cluster) opens a connection at most that often.
const reopenPause = 100 * time.Millisecond

// confirmTimeout bounds the wait for a subscription's confirmation. A
// waiter that gives up waiting still works, on back-off alone.
const confirmTimeout = 2 * time.Second

// probeRetry is how long For answers nil (back-off alone) after a probe of
// a server failed, before it probes again: every probe holds a pool
// connection until the server answers or the client's read timeout.
const probeRetry = time.Second

// A Hub is one process's subscription to one server (or, on a cluster, to
// one slot's node): every waiter of every key there shares it, each key's
// channel subscribed once and unsubscribed when its last waiter leaves.
// With no channel left the connection is closed and its goroutines end.
//
// The subscription's I/O is the hub's worker goroutine's alone, never done
// under mu: a server that stalls (or a reconnect inside go-redis) holds the
// worker, while Watch and Close only register and return by the waiter's
// context, as WithDeadlineGuard needs.
type Hub struct {
	client  pubsubClient
	sharded bool // SSUBSCRIBE (Redis 7+), as the release script's SPUBLISH

	mu    sync.Mutex
	chans map[string]*channel // channels with waiters: what the worker subscribes to
	subs  map[string]bool     // channels subscribed or asked for on ps: confirmed?
	// leaving counts the unsubscribe replies still due per channel: a
	// subscribe reply read before them answers a subscription since left,
	// not the one a new waiter asked for.
	leaving map[string]int
	working bool          // the worker goroutine runs
	ps      *redis.PubSub // the worker's; nil when not connected
	done    chan struct{} // closed when ps's receive loop has ended
	// reopen: ps is to be replaced by a connection opened anew, once the
	// cluster client has reloaded its slot map, which then routes it to
	// the node of the channels' slot: the server dropped a shard channel
	// (its slot moved), or answered a subscription with a redirection.
	reopen  bool
	reopens int // since the last confirmation, or the last close: the pause doubles
}

type channel struct {
	waiters   []*Waiter     // in arrival order
	confirmed chan struct{} // closed when the server confirmed the subscription
	// rewake: the subscription was lost (a reconnect, a dropped shard
	// channel) and is asked for again; its confirmation sends the waiters
	// to try, as a release may have gone unheard meanwhile.
	rewake bool
}

// unconfirm makes new waiters wait for the subscription asked for again,
// and has its confirmation wake the waiters. h.mu is held.
func (c *channel) unconfirm() {
	select {
	case <-c.confirmed:
		c.confirmed = make(chan struct{})
	default:
	}
	c.rewake = true
}

// A Waiter is one waiting acquire's registration on its key's channel.
type Waiter struct {
	hub     *Hub
	channel string
	wake    chan struct{} // buffered: a release while the waiter was busy is kept
}

// probe is For's one question to a server whose hub is not known yet.
type probe struct {
	done     chan struct{} // closed with the answer
	hub      *Hub          // the answer; nil when the probe failed
	failedAt time.Time
}

var hubs = struct {
	sync.Mutex
	m      map[any]*Hub
	probes map[any]*probe
}{m: make(map[any]*Hub), probes: make(map[any]*probe)}

// For returns the hub that carries key's releases, or nil when the
// store cannot subscribe (waiters then rely on back-off alone). The first
// call for a server probes it, one probe at a time however many callers
// (a round trip, which go-redis bounds by the client's read timeout, not
// by a context); For returns nil when ctx ends first, as a waiter's call
// must return by its deadline however long the server stalls
// (WithDeadlineGuard), and the probe's answer, when it comes, makes the
// hub for the next call. After a failed probe For answers nil for
// probeRetry before it asks again.
func For(ctx context.Context, c *conn.Conn, key string) *Hub {
	var (
		client pubsubClient
		id     any
	)
	switch {
	case c.IsGoZero():
		if sub := gozero.Subscriber(c.GoZero); sub != nil {
			client = sub
		}
		id = "go-zero:" + c.GoZero.R.Addr
	case c.Ring():
		// A Ring's subscription is pinned to one shard: the channels of the
		// others would never be heard. Its waiters use back-off alone.
		return nil
	default:
		s, ok := c.Store.(pubsubClient)
		if !ok {
			return nil
		}
		client, id = s, s
	}
	if client == nil {
		return nil
	}
	type slotID struct {
		id   any
		slot int
	}
	if _, cluster := client.(*redis.ClusterClient); cluster {
		// A cluster subscription is a connection to one node: one per slot.
		id = slotID{id, slot.Of(key)}
	}
	hubs.Lock()
	if h, ok := hubs.m[id]; ok {
		hubs.Unlock()
		return h
	}
	p := hubs.probes[id]
	if p != nil && !p.failedAt.IsZero() {
		if time.Since(p.failedAt) < probeRetry {
			hubs.Unlock()
			return nil
		}
		p = nil
	}
	if p == nil {
		// Failed probes are kept for probeRetry: those past it go, so that
		// servers nobody waits on any more do not stay (a cluster has a
		// hub id per slot).
		for other, q := range hubs.probes {
			if !q.failedAt.IsZero() && time.Since(q.failedAt) >= probeRetry {
				delete(hubs.probes, other)
			}
		}
		// The probe is a round trip: not under the process-wide lock, and
		// not past ctx.
		p = &probe{done: make(chan struct{})}
		hubs.probes[id] = p
		go p.ask(id, client, key)
	}
	hubs.Unlock()
	select {
	case <-p.done:
		return p.hub
	case <-ctx.Done():
		return nil
	}
}

// ask probes the server and records the answer for For's callers.
func (p *probe) ask(id any, client pubsubClient, key string) {
	sharded, err := supportsSharded(client, key)
	hubs.Lock()
	defer hubs.Unlock()
	if err != nil {
		p.failedAt = time.Now() // unknown for now: back-off until probeRetry passed
	} else {
		p.hub = newHub(client, sharded)
		hubs.m[id] = p.hub
		delete(hubs.probes, id)
	}
	close(p.done)
}

func newHub(client pubsubClient, sharded bool) *Hub {
	return &Hub{client: client, sharded: sharded, chans: make(map[string]*channel),
		subs: make(map[string]bool), leaving: make(map[string]int)}
}

// probePayload is what the probe publishes on a key's release channel (as
// the release script would, so an ACL that allows one allows the other);
// hubs ignore it.
const probePayload = "probe"

// supportsSharded asks the server whether it knows SPUBLISH, as the release
// script does, so that waiters listen where releases are announced. An
// error other than "unknown command" (the server is down, or the ACL
// forbids the release channel) is returned: the answer is unknown.
func supportsSharded(client pubsubClient, key string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), confirmTimeout)
	defer cancel()
	err := client.Do(ctx, "spublish", Channel(key), probePayload).Err()
	switch {
	case err == nil:
		return true, nil
	case strings.Contains(strings.ToLower(err.Error()), "unknown command"):
		return false, nil
	}
	return false, err
}

// Watch registers a waiter on channel and returns once the server has
// confirmed the subscription, or when ctx ends or confirmTimeout passed,
// so that a release after the waiter's next try cannot be missed. It does
// no I/O itself: the hub's worker subscribes.
func (h *Hub) Watch(ctx context.Context, ch string) *Waiter {
	w := &Waiter{hub: h, channel: ch, wake: make(chan struct{}, 1)}
	h.mu.Lock()
	c, ok := h.chans[ch]
	if !ok {
		c = &channel{confirmed: make(chan struct{})}
		h.chans[ch] = c
		if h.subs[ch] {
			close(c.confirmed) // still subscribed: the worker has not left it yet
		} else {
			h.work()
		}
	}
	c.waiters = append(c.waiters, w)
	confirmed := c.confirmed
	h.mu.Unlock()

	timer := time.NewTimer(confirmTimeout)
	defer timer.Stop()
	select {
	case <-confirmed:
	case <-ctx.Done():
	case <-timer.C:
	}
	return w
}

// Close unregisters the waiter; the hub's worker unsubscribes a channel
// whose last waiter left, and closes the connection with the last one.
// A wake the waiter did not use (it got the lock another way, or gave up)
// goes to the next waiter, so no release is lost to a departure. It does
// no I/O.
func (w *Waiter) Close() {
	h := w.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.chans[w.channel]
	for i, other := range c.waiters {
		if other == w {
			c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
			break
		}
	}
	select {
	case <-w.wake:
		c.wakeOne()
	default:
	}
	if len(c.waiters) == 0 {
		delete(h.chans, w.channel)
		h.work()
	}
}

// work starts the worker unless it runs. h.mu is held.
func (h *Hub) work() {
	if !h.working {
		h.working = true
		go h.worker()
	}
}

// worker brings the connection's subscriptions to the channels waiters
// have, until they agree: it subscribes the new ones (opening the
// connection, and its receive loop, with the first: a cluster client
// connects to the node of their slot), unsubscribes the ones left, and
// closes the connection when no channel is left. A connection to be
// reopened (see Hub.reopen) it closes, asks the cluster client to reload
// its slot map, pauses, and opens anew with every channel.
func (h *Hub) worker() {
	ctx := context.Background()
	for {
		h.mu.Lock()
		var add, drop []string
		for ch := range h.chans {
			if _, ok := h.subs[ch]; !ok {
				add = append(add, ch)
				h.subs[ch] = false
			}
		}
		for ch := range h.subs {
			if _, ok := h.chans[ch]; !ok {
				drop = append(drop, ch)
				delete(h.subs, ch)
				h.leaving[ch]++
			}
		}
		ps, closing := h.ps, len(h.chans) == 0 && h.ps != nil
		var done chan struct{}
		if h.reopen && ps != nil && !closing {
			// Everything is asked for again on the new connection, and its
			// confirmations send the waiters to try.
			h.ps, done, h.reopen = nil, h.done, false
			pause := reopenPause << min(h.reopens, 4)
			h.reopens++
			clear(h.subs)
			clear(h.leaving)
			for _, c := range h.chans {
				c.unconfirm()
			}
			h.mu.Unlock()
			_ = ps.Close()
			<-done
			if r, ok := h.client.(interface{ ReloadState(context.Context) }); ok {
				r.ReloadState(ctx) // in the background: hence the pause
			}
			time.Sleep(pause)
			continue
		}
		h.reopen = false // nothing open to replace
		if closing {
			h.ps, done, h.reopens = nil, h.done, 0
			clear(h.leaving) // no reply of ps is read any more
		}
		if len(add) == 0 && len(drop) == 0 && !closing {
			h.working = false
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()

		switch {
		case closing:
			_ = ps.Close()
			<-done
		case ps == nil && len(add) > 0:
			// Opened with its channels (a cluster client connects to the
			// node of their slot), then read: a receive loop on a
			// connection with no channel would open it anywhere. One that
			// could not be opened is closed and tried again, rather than
			// left to a receive loop that would redial it anywhere.
			if h.sharded {
				ps = h.client.SSubscribe(ctx)
			} else {
				ps = h.client.Subscribe(ctx)
			}
			if err := h.subscribe(ctx, ps, add); err != nil {
				_ = ps.Close()
				h.unsent(nil, add, nil)
				continue
			}
			h.mu.Lock()
			h.ps, h.done = ps, make(chan struct{})
			go h.receive(ps, h.done)
			h.mu.Unlock()
		case ps != nil:
			if len(add) > 0 {
				// go-redis records the channels even when the write
				// fails, and subscribes them again when it redials.
				_ = h.subscribe(ctx, ps, add)
			}
			if len(drop) > 0 {
				var err error
				if h.sharded {
					err = ps.SUnsubscribe(ctx, drop...)
				} else {
					err = ps.Unsubscribe(ctx, drop...)
				}
				if err != nil {
					// go-redis forgot the channels before the write: no
					// reply will come, and its redial leaves them out.
					h.unsent(ps, nil, drop)
				}
			}
		}
	}
}

// subscribe asks ps for chans.
func (h *Hub) subscribe(ctx context.Context, ps *redis.PubSub, chans []string) error {
	if h.sharded {
		return ps.SSubscribe(ctx, chans...)
	}
	return ps.Subscribe(ctx, chans...)
}

// unsent undoes the worker's bookkeeping for commands that could not be
// written to ps (nil: a connection that could not be opened): the
// subscriptions are asked again on its next pass, after a pause, and the
// unsubscribe replies are not waited for (go-redis forgets the channels
// before the write, so none comes). ps closed meanwhile keeps nothing to
// undo.
func (h *Hub) unsent(ps *redis.PubSub, added, dropped []string) {
	h.mu.Lock()
	if h.ps == ps {
		for _, ch := range added {
			if confirmed, ok := h.subs[ch]; ok && !confirmed {
				delete(h.subs, ch)
			}
		}
		for _, ch := range dropped {
			if n := h.leaving[ch]; n > 1 {
				h.leaving[ch] = n - 1
			} else {
				delete(h.leaving, ch)
			}
		}
	}
	h.mu.Unlock()
	time.Sleep(50 * time.Millisecond) // do not spin on a dead server
}

// receive dispatches confirmations and releases until ps is closed. After
// a connection error (go-redis reconnects and resubscribes) every waiter is
// woken to try again, since a release may have been missed meanwhile.
func (h *Hub) receive(ps *redis.PubSub, done chan struct{}) {
	defer close(done)
	for {
		msg, err := ps.Receive(context.Background())
		if err != nil {
			if errors.Is(err, redis.ErrClosed) || h.closed(ps) {
				return
			}
			h.lost(ps, err)
			if !redirected(err) { // a redirection: the worker is closing ps
				time.Sleep(50 * time.Millisecond) // do not spin on a dead server
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe", "ssubscribe":
				h.confirm(ps, m.Channel)
			case "unsubscribe", "sunsubscribe":
				h.unsubscribed(ps, m.Channel)
			}
		case *redis.Message:
			if m.Payload == probePayload {
				continue // another process's For asking whether SPUBLISH exists
			}
			if m.Payload == WakeAllPayload {
				h.wakeEvery(m.Channel)
			} else {
				h.Wake(m.Channel)
			}
		}
	}
}

// unsubscribed handles an unsubscribe reply: the answer to the worker's
// own, or, for a shard channel, the server dropping it (a slot moved or
// its master failed over). One dropped while waiters still need it has
// the connection reopened, every channel asked for again where the slot
// is served now, and its waiters are sent to try (a release may have gone
// unheard meanwhile), now and once it is confirmed.
func (h *Hub) unsubscribed(ps *redis.PubSub, ch string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ps != ps {
		return
	}
	if n := h.leaving[ch]; n > 0 {
		if n == 1 {
			delete(h.leaving, ch)
		} else {
			h.leaving[ch] = n - 1
		}
		return
	}
	c, ok := h.chans[ch]
	if _, asked := h.subs[ch]; !asked {
		return
	}
	delete(h.subs, ch) // the server left it: neither confirmed nor to unsubscribe
	if !ok {
		return
	}
	c.unconfirm()
	// On a cluster the slot's node has changed: asked again on this
	// connection, the channel would be refused with MOVED. A new one,
	// opened once the client has reloaded its slot map, goes where the
	// slot is served now.
	h.reopen = true
	h.work()
	for _, w := range c.waiters {
		w.notify()
	}
}

// lost handles an error from the connection's receive: go-redis redials
// and subscribes every channel again, so the subscriptions are unconfirmed
// until the server says so, the unsubscribe replies due are lost, and
// every waiter is sent to try, now and once its channel is confirmed. A
// redirection (MOVED, ASK) has the connection reopened instead.
func (h *Hub) lost(ps *redis.PubSub, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ps != ps {
		return
	}
	var reply redis.Error
	switch {
	case !errors.As(err, &reply): // the connection broke, not a command
		clear(h.leaving)
		for ch := range h.subs {
			h.subs[ch] = false
		}
		for _, c := range h.chans {
			c.unconfirm()
		}
	case redirected(err):
		// A subscription sent to a node that no longer serves the slot
		// (the worker reopened the connection before the client knew
		// where the slot went): reopened again once the client reloaded
		// its map.
		h.reopen = true
		h.work()
	}
	for _, c := range h.chans {
		for _, w := range c.waiters {
			w.notify()
		}
	}
}

// redirected reports a cluster's redirection of a command: MOVED (the
// slot is served elsewhere) or ASK (it is being migrated).
func redirected(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ")
}

func (h *Hub) closed(ps *redis.PubSub) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ps != ps
}

func (h *Hub) confirm(ps *redis.PubSub, ch string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ps != ps || h.leaving[ch] > 0 {
		return // a connection the worker has closed, or a subscription since left
	}
	if _, asked := h.subs[ch]; !asked {
		return
	}
	h.subs[ch] = true
	h.reopens = 0
	if c, ok := h.chans[ch]; ok {
		if c.rewake {
			c.rewake = false
			for _, w := range c.waiters {
				w.notify()
			}
		}
		select {
		case <-c.confirmed:
		default:
			close(c.confirmed)
		}
	}
}

// Wake hands a release to one waiter of ch: only one can win the lock, and
// waking every waiter of the process would send them all to Redis at once.
// The waiter keeps its place if it loses to another process, and passes an
// unused wake on when it leaves.
func (h *Hub) Wake(ch string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.chans[ch]; ok {
		c.wakeOne()
	}
}

// WakeAllPayload is the announcement that every waiter of a channel may
// win at once (a writer's release, which readers share); any other payload
// hands the release to one waiter.
const WakeAllPayload = "released:all"

// wakeEvery sends every waiter of ch to try again.
func (h *Hub) wakeEvery(ch string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.chans[ch]; ok {
		for _, w := range c.waiters {
			w.notify()
		}
	}
}

// wakeOne notifies the first waiter that has no wake pending. h.mu is held.
func (c *channel) wakeOne() {
	for _, w := range c.waiters {
		select {
		case w.wake <- struct{}{}:
			return
		default:
		}
	}
}

func (w *Waiter) notify() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Woken is where a release's wake reaches the waiter.
func (w *Waiter) Woken() <-chan struct{} { return w.wake }

// Waiters counts the waiters on ch, for the tests.
func (h *Hub) Waiters(ch string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.chans[ch]; ok {
		return len(c.waiters)
	}
	return 0
}
