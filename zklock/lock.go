package zklock

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/observe/lockobs"
)

// A Lock is a lock on one key in ZooKeeper: an ephemeral sequential node
// under the key's persistent parent, held while it is the lowest there.
// It is safe for concurrent use; acquires on one instance run one at a
// time, and acquiring again while holding keeps the hold.
type Lock struct {
	conn   *zk.Conn
	key    string
	parent string // root + "/" + escaped key
	o      options
	obs    *lockobs.Instruments

	acquiring chan struct{} // a one-slot semaphore over acquires
	fence     atomic.Int64

	mu      sync.Mutex
	node    string    // our node's path while held
	session int64     // the session that created node
	gen     uint64    // counts holds and forgets: a stale expiry timer does nothing
	since   time.Time // when the current hold was taken
	lapsed  bool      // the latest hold ended without Release: expired, or found lost
	timer   *time.Timer
	dog     *watchdog
}

// New returns a lock on key over conn. It does not talk to ZooKeeper: the
// root and the key's parent are created on the first acquire. It reports
// its acquires, holds and losses to package observe under the name
// WithName gives.
func New(conn *zk.Conn, key string, opts ...Option) *Lock {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	return &Lock{
		conn:      conn,
		key:       key,
		parent:    strings.TrimSuffix(o.root, "/") + "/" + escapeKey(key),
		o:         o,
		obs:       lockobs.For("zookeeper", "mutex", o.name),
		acquiring: make(chan struct{}, 1),
	}
}

// Key returns the lock's key.
func (l *Lock) Key() string {
	return l.key
}

// QueuePath returns the persistent node under which the key's contenders
// queue: the root, then the key with every byte outside [A-Za-z0-9_:-]
// written as %XX.
func (l *Lock) QueuePath() string {
	return l.parent
}

// Fence returns the fencing token of the lock's current (or latest) hold:
// its node's sequence number plus one, so that 0 means never held. The
// sequence is ZooKeeper's own, so tokens strictly increase over the
// successive holders of a key for as long as its parent node is kept, up
// to 2^31 nodes per key.
func (l *Lock) Fence() int64 {
	return l.fence.Load()
}

// Acquire is AcquireCtx with context.Background().
func (l *Lock) Acquire() (bool, error) {
	return l.AcquireCtx(context.Background())
}

// AcquireCtx tries once to take the lock: it creates its node and keeps it
// when it is the lowest under the key's parent, or deletes it and returns
// false, with a nil error, when another holder or an earlier waiter is
// there. A held lock answers true after checking its node still exists.
//
// It returns ErrInvalidExpiry when the expiry is not positive, ErrNodeLost
// when the new node vanished before the decision, an error wrapping
// ErrZooKeeper and the client's error when ZooKeeper cannot answer, and
// one for which errors.Is(err, ctx.Err()) holds when ctx ended; a node
// made for a call that failed is deleted.
func (l *Lock) AcquireCtx(ctx context.Context) (bool, error) {
	ctx, a := l.obs.StartAcquire(ctx, false)
	ok, err := l.tryAcquire(ctx)
	a.End(lockobs.TryOutcome(ok, err), l.fenceIf(ok), err)
	return ok, err
}

// tryAcquire is AcquireCtx without its observation.
func (l *Lock) tryAcquire(ctx context.Context) (bool, error) {
	if l.o.expiry <= 0 {
		return false, l.wrap(ctx, "acquire", ErrInvalidExpiry)
	}
	if err := l.enter(ctx); err != nil {
		return false, l.wrap(ctx, "acquire", err)
	}
	defer l.leave()
	if held, err := l.stillHeld(ctx); err != nil || held {
		return held, err
	}
	node, session, err := l.create(ctx)
	if err != nil {
		return false, l.wrap(ctx, "acquire", err)
	}
	pred, seq, err := l.position(ctx, node)
	if err != nil || pred != "" {
		l.discard(node, session)
		if err != nil {
			return false, l.wrap(ctx, "acquire", err)
		}
		return false, nil
	}
	l.hold(node, session, seq)
	return true, nil
}

// Release is ReleaseCtx with context.Background().
func (l *Lock) Release() (bool, error) {
	return l.ReleaseCtx(context.Background())
}

// ReleaseCtx stops the lock's Watch (its context ends with
// zerolock.ErrReleased) and deletes its node. It reports true when it
// released the lock and false, with a nil error, when the lock was not
// held (never taken, released by its expiry timer, or lost with its
// session).
//
// It returns an error wrapping ErrZooKeeper when ZooKeeper cannot answer,
// and one for which errors.Is(err, ctx.Err()) holds when ctx ended; the
// lock then still counts as held, its expiry timer runs again, and a
// later ReleaseCtx may settle it. Callers that release on the way out of a
// request should pass a context that is not already cancelled, such as
// context.WithoutCancel(ctx).
func (l *Lock) ReleaseCtx(ctx context.Context) (bool, error) {
	l.stopWatchdog(ctx, zerolock.ErrReleased)
	if err := ctx.Err(); err != nil {
		l.mu.Lock()
		if l.node != "" && l.dog == nil {
			l.armTimer() // the hold stays, and must still end by itself
		}
		l.mu.Unlock()
		return false, l.wrap(ctx, "release", err)
	}
	l.mu.Lock()
	node, session, since, lapsed := l.node, l.session, l.since, l.lapsed
	l.forget()
	l.lapsed = false
	l.mu.Unlock()
	if node == "" {
		if lapsed {
			l.obs.ReleasedGone()
		}
		return false, nil
	}
	_, err := call(ctx, func() (struct{}, error) { return struct{}{}, l.conn.Delete(node, -1) }, nil)
	switch {
	case err == nil:
		l.obs.Held(time.Since(since))
		return true, nil
	case errors.Is(err, zk.ErrNoNode):
		l.obs.ReleasedGone()
		return false, nil
	}
	l.mu.Lock()
	if l.node == "" {
		l.holdLocked(node, session)
		l.since = since
	}
	l.mu.Unlock()
	return false, l.wrap(ctx, "release", err)
}

// enter takes the acquire semaphore, or gives up when ctx ends.
func (l *Lock) enter(ctx context.Context) error {
	select {
	case l.acquiring <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *Lock) leave() {
	<-l.acquiring
}

// stillHeld reports whether the instance holds the lock, checking that its
// node still exists in the same session; a lost hold is forgotten. An
// unwatched hold's expiry starts again.
func (l *Lock) stillHeld(ctx context.Context) (bool, error) {
	l.mu.Lock()
	node, session := l.node, l.session
	l.mu.Unlock()
	if node == "" {
		return false, nil
	}
	stat, err := call(ctx, func() (*zk.Stat, error) {
		ok, stat, err := l.conn.Exists(node)
		if err == nil && !ok {
			stat = nil
		}
		return stat, err
	}, nil)
	if err != nil {
		return false, l.wrap(ctx, "acquire", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.node != node {
		return false, nil // released or expired meanwhile
	}
	if stat == nil || stat.EphemeralOwner != session {
		l.forget()
		l.lapsed = true
		return false, nil
	}
	if l.dog == nil {
		l.armTimer()
	}
	return true, nil
}

// create makes this instance's node under the key's parent with the
// client's protected create, which finds its node again after a
// connection loss instead of leaving a second one, and creates the root
// and parent on first use. It returns the node's path and session.
func (l *Lock) create(ctx context.Context) (string, int64, error) {
	prefix := l.parent + "/lock-"
	mk := func() (string, error) {
		return l.conn.CreateProtectedEphemeralSequential(prefix, nil, l.o.acl)
	}
	undo := func(node string) { l.discard(node, l.conn.SessionID()) }
	node, err := call(ctx, mk, undo)
	if errors.Is(err, zk.ErrNoNode) {
		if err = l.createParents(ctx); err == nil {
			node, err = call(ctx, mk, undo)
		}
	}
	if err != nil {
		return "", 0, err
	}
	return node, l.conn.SessionID(), nil
}

// createParents creates the root's nodes and the key's parent as
// persistent nodes, never deleted so sequence numbers never restart.
func (l *Lock) createParents(ctx context.Context) error {
	parts := strings.Split(strings.TrimPrefix(l.parent, "/"), "/")
	path := ""
	for _, p := range parts {
		path += "/" + p
		_, err := call(ctx, func() (string, error) { return l.conn.Create(path, nil, 0, l.o.acl) }, nil)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// position lists the key's queue and returns the node just before ours
// ("" when ours is the lowest) and our sequence number. It returns
// ErrNodeLost when our node is not there.
func (l *Lock) position(ctx context.Context, node string) (pred string, seq int64, err error) {
	children, err := call(ctx, func() ([]string, error) {
		c, _, err := l.conn.Children(l.parent)
		return c, err
	}, nil)
	if err != nil {
		return "", 0, err
	}
	name := node[strings.LastIndexByte(node, '/')+1:]
	seq, ok := sequence(name)
	if !ok {
		return "", 0, ErrNodeLost
	}
	type entry struct {
		name string
		seq  int64
	}
	queue := make([]entry, 0, len(children))
	found := false
	for _, c := range children {
		if s, ok := sequence(c); ok {
			queue = append(queue, entry{c, s})
			found = found || c == name
		}
	}
	if !found {
		return "", 0, ErrNodeLost
	}
	sort.Slice(queue, func(i, j int) bool { return queue[i].seq < queue[j].seq })
	for i, e := range queue {
		if e.name == name {
			if i == 0 {
				return "", seq, nil
			}
			return l.parent + "/" + queue[i-1].name, seq, nil
		}
	}
	return "", 0, ErrNodeLost
}

// sequence reads the sequence number ZooKeeper appended to a lock node's
// name (…lock-0000000042); ok is false for a node that is not a lock's.
func sequence(name string) (int64, bool) {
	i := strings.LastIndex(name, "lock-")
	if i < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(name[i+len("lock-"):], 10, 64)
	return n, err == nil
}

// hold records a fresh hold with its fencing token and starts its expiry
// timer.
func (l *Lock) hold(node string, session, seq int64) {
	l.fence.Store(seq + 1)
	l.mu.Lock()
	l.holdLocked(node, session)
	l.mu.Unlock()
}

// holdLocked records a hold and starts its expiry timer; l.mu is held.
func (l *Lock) holdLocked(node string, session int64) {
	l.node, l.session = node, session
	l.since, l.lapsed = time.Now(), false
	l.gen++
	l.armTimer()
}

// fenceIf is the fencing token an acquire that answered ok reports.
func (l *Lock) fenceIf(ok bool) int64 {
	if !ok {
		return 0
	}
	return l.Fence()
}
