package zklock

import (
	"time"

	"github.com/go-zookeeper/zk"
)

// DefaultRoot is the node under which locks keep their per-key parents.
const DefaultRoot = "/zerolock"

// DefaultExpiry is the lifetime of an unwatched lock: that of a redislock
// RedisLock made without options (go-zero's no expiry plus its 500 ms
// tolerance).
const DefaultExpiry = 500 * time.Millisecond

// An Option customizes a Lock.
type Option func(*options)

type options struct {
	root           string
	expiry         time.Duration
	acl            []zk.ACL
	sessionTimeout time.Duration
	name           string
}

func defaultOptions() options {
	return options{root: DefaultRoot, expiry: DefaultExpiry, acl: zk.WorldACL(zk.PermAll)}
}

// WithRoot sets the node under which the per-key parents live, an absolute
// path without a trailing slash; the default is DefaultRoot. It and the
// parents are created as persistent nodes on first use and never deleted,
// so that sequence numbers, and with them fencing tokens, never restart.
func WithRoot(root string) Option {
	return func(o *options) {
		o.root = root
	}
}

// WithExpiry sets how long an acquired lock that is not watched stays held
// before this process deletes its node; the default is DefaultExpiry. It
// must be positive.
func WithExpiry(expiry time.Duration) Option {
	return func(o *options) {
		o.expiry = expiry
	}
}

// WithACL sets the ACL of the nodes the lock creates; the default is
// zk.WorldACL(zk.PermAll).
func WithACL(acl ...zk.ACL) Option {
	return func(o *options) {
		o.acl = acl
	}
}

// WithSessionTimeout tells Watch the session timeout the server granted the
// connection (what zk.Connect asked for, clamped by the server to between 2
// and 20 tickTimes). Watch then tolerates a connection without its session
// for up to a third of it before it signals ErrLockLost: the server expires
// a session d after it last heard from the client, and the client notices
// a silent server only after two thirds of d. The default, 0, signals as
// soon as the connection loses its session, which is always safe.
func WithSessionTimeout(d time.Duration) Option {
	return func(o *options) {
		o.sessionTimeout = d
	}
}

// WithName sets what the lock reports itself as in metrics and traces
// (package observe): a bounded label, such as "checkout" or a route, never
// the key, since every distinct name is a series of its own. The default
// is "unnamed" (lockobs.Unnamed).
func WithName(name string) Option {
	return func(o *options) {
		o.name = name
	}
}
