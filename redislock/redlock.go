package redislock

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerolock/zerolock/observe/lockobs"
	"github.com/zerolock/zerolock/redislock/internal/conn"
	"github.com/zerolock/zerolock/redislock/internal/deadline"
)

// defaultNodeTimeout bounds each node's call of a RedLock unless
// WithNodeTimeout says otherwise: much shorter than any sensible expiry, so
// a slow or dead node costs little of the lock's validity.
const defaultNodeTimeout = 50 * time.Millisecond

// A RedLock is the Redlock algorithm over independent Redis masters: the
// lock is held when a majority of them granted it within its validity. It
// has RedisLock's methods and semantics ((false, nil) when another holder
// has a majority), for locks that must survive the loss of a master.
type RedLock struct {
	key         string
	nodes       []*RedisLock // one per store, all with the same token
	nodeTimeout time.Duration
	expiry      atomic.Int64 // time.Duration, shared with the nodes
	tolerance   time.Duration
	obs         *lockobs.Instruments // its nodes report nothing

	mu         sync.Mutex
	validUntil time.Time
	heldSince  monoTime // when the hold began, for its hold time
	goneBy     monoTime // when every node has expired the hold unless acquired again
}

// NewRedLock returns a RedLock on key over stores, which must be independent
// masters (not replicas of each other), ideally five. Options apply to every
// node; WithNodeTimeout bounds each node's call. WithFencing and
// WithBackoff are refused: every acquire returns an error wrapping
// ErrOptionNotApplicable (see Option).
func NewRedLock(stores []Store, key string, opts ...Option) *RedLock {
	o := applyOptions(opts)
	return newRedLock(stores, key, o)
}

// newRedLock is NewRedLock with its options applied.
func newRedLock(stores []Store, key string, o options) *RedLock {
	token := newLockToken(o.quietRelease)
	r := &RedLock{key: key, nodeTimeout: o.nodeTimeout, tolerance: o.tolerance,
		obs: lockobs.For(backendRedLock, kindMutex, o.name)}
	if r.nodeTimeout <= 0 {
		r.nodeTimeout = defaultNodeTimeout
	}
	refused := o.refuse(redLockRefuses, "a RedLock", key, nil)
	for _, s := range stores {
		n := newLock(conn.Wrap(s), key, token, &o)
		n.guard = deadline.None // each bounds every node call by itself
		n.refused = refused     // the RedLock's acquire asks its first node's px
		r.nodes = append(r.nodes, n)
	}
	r.SetExpiry(o.expiry)
	return r
}

// WithNodeTimeout bounds each node's call of a RedLock (default 50 ms).
// Every other kind of lock refuses it (see Option).
func WithNodeTimeout(d time.Duration) Option {
	return func(o *options) {
		o.nodeTimeout = d
		o.given |= optNodeTimeout
	}
}

// SetExpire sets the expiry in whole seconds, as RedisLock.SetExpire.
func (r *RedLock) SetExpire(seconds int) {
	r.SetExpiry(time.Duration(seconds) * time.Second)
}

// SetExpiry sets the expiry with millisecond precision.
func (r *RedLock) SetExpiry(expiry time.Duration) {
	r.expiry.Store(int64(expiry))
	for _, n := range r.nodes {
		n.SetExpiry(expiry)
	}
}

// Acquire is AcquireCtx with context.Background().
func (r *RedLock) Acquire() (bool, error) {
	return r.AcquireCtx(context.Background())
}

// AcquireCtx tries every node at once, each bounded by the node timeout, and
// holds the lock when a majority granted it and the validity left (expiry
// plus tolerance, less the time taken on the monotonic clock, less 1% and
// 2 ms for clock drift) is positive. Otherwise it releases on every node,
// so no key is left behind, and reports false: with a nil error when a
// majority of nodes answered (another holder has the lock), or with a
// *QuorumError (errors.Is ErrQuorum) that lists each node's outcome when
// failures kept it from a majority or the validity ran out.
func (r *RedLock) AcquireCtx(ctx context.Context) (bool, error) {
	ctx, a := r.obs.StartAcquire(ctx, false)
	ok, err := r.acquire(ctx)
	a.End(tryOutcome(ok, err), 0, err)
	return ok, err
}

// acquire is AcquireCtx unobserved.
func (r *RedLock) acquire(ctx context.Context) (bool, error) {
	px, err := r.nodes[0].px()
	if err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("redislock: acquire %q on %d nodes: %w", r.nodes[0].Key(), len(r.nodes), err)
	}
	start := time.Now()
	outcomes := r.each(ctx, func(ctx context.Context, n *RedisLock) (bool, error) {
		return n.acquire(ctx)
	})
	elapsed := time.Since(start)
	validity := px - elapsed - (px/100 + 2*time.Millisecond)

	acquired, failed := 0, 0
	for _, o := range outcomes {
		switch {
		case o.Err != nil:
			failed++
		case o.OK:
			acquired++
		}
	}
	quorum := len(r.nodes)/2 + 1
	if acquired >= quorum && validity > 0 {
		r.mu.Lock()
		r.validUntil = start.Add(px - (px/100 + 2*time.Millisecond))
		began := monoOf(start)
		if r.heldSince.isZero() || began.after(r.goneBy) {
			// Not held, or the hold expired on every node before this
			// acquire began: a new hold, not a re-entrant one.
			r.heldSince = began
		}
		r.goneBy = began.add(elapsed + px) // every node had answered by then
		r.mu.Unlock()
		return true, nil
	}
	r.mu.Lock()
	r.heldSince = 0 // a hold it had is lost: releaseAll ends what is left
	r.mu.Unlock()
	r.releaseAll(ctx)
	if failed == 0 && acquired < quorum {
		return false, nil // a majority answered: the lock is held elsewhere
	}
	return false, &QuorumError{Acquired: acquired, Needed: quorum, Nodes: outcomes, Elapsed: elapsed,
		Expired: acquired >= quorum}
}

// Validity reports how long the lock stays valid: from the latest
// successful acquire, on the monotonic clock, with the drift allowance
// taken off. It is 0 when the lock is not held.
func (r *RedLock) Validity() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(time.Until(r.validUntil), 0)
}

// Release is ReleaseCtx with context.Background().
func (r *RedLock) Release() (bool, error) {
	return r.ReleaseCtx(context.Background())
}

// ReleaseCtx releases on every node. It reports true when a majority of
// nodes still held this lock's token and deleted it, and a *QuorumError
// when failures kept it from hearing a majority.
func (r *RedLock) ReleaseCtx(ctx context.Context) (bool, error) {
	r.mu.Lock()
	r.validUntil = time.Time{}
	began := r.heldSince
	r.heldSince = 0
	r.mu.Unlock()
	ok, err := r.release(ctx)
	if err == nil {
		observeRelease(r.obs, began, ok)
	}
	return ok, err
}

// release is ReleaseCtx unobserved.
func (r *RedLock) release(ctx context.Context) (bool, error) {
	outcomes := r.each(ctx, func(ctx context.Context, n *RedisLock) (bool, error) {
		return n.release(ctx)
	})
	released, failed := 0, 0
	for _, o := range outcomes {
		switch {
		case o.Err != nil:
			failed++
		case o.OK:
			released++
		}
	}
	quorum := len(r.nodes)/2 + 1
	if len(r.nodes)-failed < quorum {
		return false, &QuorumError{Acquired: released, Needed: quorum, Nodes: outcomes}
	}
	return released >= quorum, nil
}

// releaseAll releases on every node after a failed acquire, on a context
// that ignores the caller's cancellation (the keys must not linger).
func (r *RedLock) releaseAll(ctx context.Context) {
	r.each(context.WithoutCancel(ctx), func(ctx context.Context, n *RedisLock) (bool, error) {
		return n.release(ctx)
	})
}

// each calls f on every node in parallel, each under the node timeout, and
// stops waiting at the timeout even when a client does not honour its
// context (go-redis ignores deadlines on a connection unless
// ContextTimeoutEnabled is set): a node that has not answered by then
// counts as failed, and its call finishes in the background.
func (r *RedLock) each(ctx context.Context, f func(context.Context, *RedisLock) (bool, error)) []NodeOutcome {
	outcomes := make([]NodeOutcome, len(r.nodes))
	for i := range outcomes {
		outcomes[i] = NodeOutcome{Node: i, Err: fmt.Errorf("no answer within %v: %w", r.nodeTimeout, context.DeadlineExceeded)}
	}
	results := make(chan NodeOutcome, len(r.nodes))
	for i, n := range r.nodes {
		go func() {
			nctx, cancel := context.WithTimeout(ctx, r.nodeTimeout)
			defer cancel()
			ok, err := f(nctx, n)
			results <- NodeOutcome{Node: i, OK: ok, Err: err}
		}()
	}
	timer := time.NewTimer(r.nodeTimeout)
	defer timer.Stop()
	answered := make([]bool, len(r.nodes))
	for range r.nodes {
		select {
		case o := <-results:
			outcomes[o.Node], answered[o.Node] = o, true
		case <-timer.C:
			return outcomes
		case <-ctx.Done():
			// The caller's context ended first: that, not the node timeout,
			// is why the others have no answer, and errors.Is must say so.
			for i := range outcomes {
				if !answered[i] {
					outcomes[i].Err = fmt.Errorf("no answer before the context ended: %w", ctx.Err())
				}
			}
			return outcomes
		}
	}
	return outcomes
}

// NodeOutcome is what one node of a RedLock answered.
type NodeOutcome struct {
	// Node is the index of the node's store in NewRedLock's stores.
	Node int
	// OK reports that the node granted (or released) the lock.
	OK bool
	// Err is the node's failure, nil when it answered.
	Err error
}

// QuorumError says why a RedLock could not decide on a majority, node by
// node. errors.Is(err, ErrQuorum) holds, and so does errors.Is for each
// node's error (a context's, a network error).
type QuorumError struct {
	// Acquired counts the nodes that granted the lock (or released it).
	Acquired int
	// Needed is the majority.
	Needed int
	// Nodes are the outcomes in store order.
	Nodes []NodeOutcome
	// Elapsed is how long the attempt took.
	Elapsed time.Duration
	// Expired reports a majority that came too late: no validity was left.
	Expired bool
}

// Error lists the outcome of every node.
func (e *QuorumError) Error() string {
	var b strings.Builder
	if e.Expired {
		fmt.Fprintf(&b, "redislock: no quorum: %d of %d nodes granted the lock, but only after %v, past its validity", e.Acquired, len(e.Nodes), e.Elapsed)
	} else {
		fmt.Fprintf(&b, "redislock: no quorum: %d of %d nodes, %d needed", e.Acquired, len(e.Nodes), e.Needed)
	}
	for _, n := range e.Nodes {
		switch {
		case n.Err != nil:
			fmt.Fprintf(&b, "; node %d: %v", n.Node, n.Err)
		case n.OK:
			fmt.Fprintf(&b, "; node %d: ok", n.Node)
		default:
			fmt.Fprintf(&b, "; node %d: held by another", n.Node)
		}
	}
	return b.String()
}

// Unwrap returns ErrQuorum, then the nodes' errors, so errors.Is matches
// ErrQuorum and each node's error.
func (e *QuorumError) Unwrap() []error {
	errs := []error{ErrQuorum}
	for _, n := range e.Nodes {
		if n.Err != nil {
			errs = append(errs, n.Err)
		}
	}
	return errs
}
