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

// confirmTimeout bounds the wait for a subscription's confirmation. A
// waiter that gives up waiting still works, on back-off alone.
const confirmTimeout = 2 * time.Second

// A Hub is one process's subscription to one server (or, on a cluster, to
// one slot's node): every waiter of every key there shares it, each key's
// channel subscribed once and unsubscribed when its last waiter leaves.
// With no channel left the connection is closed and its goroutine ends.
type Hub struct {
	client  pubsubClient
	sharded bool // SSUBSCRIBE (Redis 7+), as the release script's SPUBLISH

	mu    sync.Mutex
	ps    *redis.PubSub
	done  chan struct{} // closed when ps's receive loop has ended
	chans map[string]*channel
}

type channel struct {
	waiters   []*Waiter     // in arrival order
	confirmed chan struct{} // closed when the server confirmed the subscription
}

// A Waiter is one waiting acquire's registration on its key's channel.
type Waiter struct {
	hub     *Hub
	channel string
	wake    chan struct{} // buffered: a release while the waiter was busy is kept
}

var hubs = struct {
	sync.Mutex
	m map[any]*Hub
}{m: make(map[any]*Hub)}

// For returns the hub that carries key's releases, or nil when the
// store cannot subscribe (waiters then rely on back-off alone). The first
// call for a server probes it (a round trip, bounded by confirmTimeout);
// For returns nil when ctx ends first, as a waiter's call must return by
// its deadline however long the server stalls (WithDeadlineGuard), and the
// probe's answer, when it comes, makes the hub for the next call.
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
	h, ok := hubs.m[id]
	hubs.Unlock()
	if ok {
		return h
	}
	// The probe is a round trip: not under the process-wide lock, and not
	// past ctx.
	made := make(chan *Hub, 1)
	go func() {
		sharded, err := supportsSharded(client, key)
		if err != nil {
			made <- nil // unknown for now: back-off this time, ask again next time
			return
		}
		hubs.Lock()
		defer hubs.Unlock()
		h, ok := hubs.m[id]
		if !ok {
			h = &Hub{client: client, sharded: sharded, chans: make(map[string]*channel)}
			hubs.m[id] = h
		}
		made <- h
	}()
	select {
	case h := <-made:
		return h
	case <-ctx.Done():
		return nil
	}
}

// supportsSharded asks the server whether it knows SPUBLISH, as the release
// script does, so that waiters listen where releases are announced. An
// error other than "unknown command" (the server is down, or the ACL
// forbids the probe's channel) is returned: the answer is unknown.
func supportsSharded(client pubsubClient, key string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), confirmTimeout)
	defer cancel()
	err := client.Do(ctx, "spublish", Channel(key), "probe").Err()
	switch {
	case err == nil:
		return true, nil
	case strings.Contains(strings.ToLower(err.Error()), "unknown command"):
		return false, nil
	}
	return false, err
}

// Watch registers a waiter on channel and returns once the server has
// confirmed the subscription (or confirmTimeout passed), so that a release
// after the waiter's next try cannot be missed.
func (h *Hub) Watch(ctx context.Context, ch string) *Waiter {
	w := &Waiter{hub: h, channel: ch, wake: make(chan struct{}, 1)}
	h.mu.Lock()
	c, ok := h.chans[ch]
	if !ok {
		c = &channel{confirmed: make(chan struct{})}
		h.chans[ch] = c
		h.subscribe(ctx, ch)
	}
	c.waiters = append(c.waiters, w)
	h.mu.Unlock()

	timer := time.NewTimer(confirmTimeout)
	defer timer.Stop()
	select {
	case <-c.confirmed:
	case <-ctx.Done():
	case <-timer.C:
	}
	return w
}

// subscribe adds ch to the connection, opening it (and its receive loop)
// for the first channel. The connection is opened with the channel, so a
// cluster client connects to the node of the channel's slot. h.mu is held.
func (h *Hub) subscribe(ctx context.Context, ch string) {
	if h.ps != nil {
		if h.sharded {
			_ = h.ps.SSubscribe(ctx, ch)
		} else {
			_ = h.ps.Subscribe(ctx, ch)
		}
		return
	}
	if h.sharded {
		h.ps = h.client.SSubscribe(ctx, ch)
	} else {
		h.ps = h.client.Subscribe(ctx, ch)
	}
	h.done = make(chan struct{})
	go h.receive(h.ps, h.done)
}

// Close unregisters the waiter; the last waiter of a channel unsubscribes
// it, and the last channel closes the connection and waits for its loop.
// A wake the waiter did not use (it got the lock another way, or gave up)
// goes to the next waiter, so no release is lost to a departure.
func (w *Waiter) Close() {
	h := w.hub
	h.mu.Lock()
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
	var done chan struct{}
	if len(c.waiters) == 0 {
		delete(h.chans, w.channel)
		ctx := context.Background()
		if h.sharded {
			_ = h.ps.SUnsubscribe(ctx, w.channel)
		} else {
			_ = h.ps.Unsubscribe(ctx, w.channel)
		}
		if len(h.chans) == 0 {
			_ = h.ps.Close()
			h.ps, done = nil, h.done
		}
	}
	h.mu.Unlock()
	if done != nil {
		<-done
	}
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
			h.wakeAll()
			time.Sleep(50 * time.Millisecond) // do not spin on a dead server
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe", "ssubscribe":
				h.confirm(m.Channel)
			case "sunsubscribe":
				// Redis drops shard subscriptions when a slot moves or its
				// master fails over; one still wanted is made again.
				h.resubscribe(ps, m.Channel)
			}
		case *redis.Message:
			if m.Payload == WakeAllPayload {
				h.wakeEvery(m.Channel)
			} else {
				h.Wake(m.Channel)
			}
		}
	}
}

// resubscribe subscribes again to a shard channel the server dropped while
// waiters still need it, and sends them to try (a release may have gone
// unheard meanwhile).
func (h *Hub) resubscribe(ps *redis.PubSub, ch string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.chans[ch]
	if !ok || h.ps != ps {
		return // unsubscribed on purpose
	}
	_ = ps.SSubscribe(context.Background(), ch)
	for _, w := range c.waiters {
		w.notify()
	}
}

func (h *Hub) closed(ps *redis.PubSub) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ps != ps
}

func (h *Hub) confirm(ch string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.chans[ch]; ok {
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

// wakeAll sends every waiter to try again, after a reconnect that may have
// lost releases.
func (h *Hub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.chans {
		for _, w := range c.waiters {
			w.notify()
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
