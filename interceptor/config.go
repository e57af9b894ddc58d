package interceptor

import (
	"time"

	"github.com/zerolock/zerolock/internal/guard"
)

// Lock modes.
const (
	// ModeInflight releases the lock when the method returns.
	ModeInflight = guard.ModeInflight
	// ModeWindow keeps the lock until Expire passes (after the acquisition,
	// or, for a method that ran past a third of Expire and was renewed,
	// after it returned), refusing repeats that arrive after the first call
	// ended, unless the method failed with
	// Internal, Unknown, Unavailable or DeadlineExceeded, or panicked.
	ModeWindow = guard.ModeWindow
	// ModeReplay stores the first call's result in place of the lock, for
	// Retain, and answers a retry of a completed call with that result: the
	// same response message, or the same status for an error the method
	// returned, without running the method. A retry while the first call
	// runs is refused with RejectCode (Aborted by default), as in inflight
	// mode.
	ModeReplay = guard.ModeReplay
	// ModeLimit lets up to Permits calls of one key run at once (two
	// concurrent exports per user, say) and refuses the next with
	// codes.Aborted, a RetryInfo and a QuotaFailure (see the package doc
	// for why not ResourceExhausted). Each call holds a permit of a
	// semaphore until the method returns or panics, and a crashed server's
	// permits free themselves after Expire. It needs a Redis store backend.
	ModeLimit = guard.ModeLimit
	// ModeRate admits up to Quota calls of one key in any Period-long
	// window (ten searches a second per caller, say) and refuses the next
	// with codes.Aborted (or the rule's RejectCode), a RetryInfo and a
	// QuotaFailure, as limit mode does. It takes no lock: each call is
	// counted, on the Redis server's clock, by one script. It needs a
	// Redis store backend.
	ModeRate = guard.ModeRate
)

// Defaults of LockConf, as its conf tags declare them.
const (
	// DefaultPrefix is the namespace of lock keys.
	DefaultPrefix = "zerolock"
	// DefaultExpire is the lock's lifetime.
	DefaultExpire = 5 * time.Second
	// DefaultRetain is how long replay mode keeps a completed call's
	// result.
	DefaultRetain = guard.DefaultRetain
)

// LockConf configures the interceptor. It is loaded with go-zero's conf
// package, defaults included; zero fields of a LockConf built in code take
// the same defaults.
type LockConf struct {
	// Prefix is the namespace of every lock key.
	Prefix string `json:",default=zerolock"`
	// Expire is the lock's lifetime in Redis: the window in window mode, the
	// safety net that frees a crashed process's lock in every mode (a
	// running method's hold is renewed: see DisableRenew).
	Expire time.Duration `json:",default=5s"`
	// Mode is inflight, window, replay, limit or rate.
	Mode string `json:",default=inflight,options=inflight|window|replay|limit|rate"`
	// Permits is how many calls of one key limit mode lets run at once,
	// for the rules in limit mode that do not set their own.
	Permits int `json:",optional"`
	// Quota and Period are the rate of the rules in rate mode that do not
	// set their own: at most Quota calls of one key in any Period-long
	// window.
	Quota  int           `json:",optional"`
	Period time.Duration `json:",optional"`
	// Retain is how long replay mode keeps a completed call's result and
	// hands it to retries. Every result kept costs Redis memory for that
	// long.
	Retain time.Duration `json:",default=24h"`
	// FailOpen lets calls through, logged, when Redis cannot be reached.
	// By default they fail with codes.Unavailable.
	FailOpen bool `json:",optional"`
	// Renew is accepted for configurations written before renewal became
	// the default; it changes nothing. Renewal is on unless DisableRenew.
	Renew bool `json:",optional"`
	// DisableRenew turns off the renewal of holds while the method runs. By
	// default, in every mode, the hold (a lock, or a limit mode permit) is
	// renewed from a third of Expire on, until the method returns (also
	// after zrpc's timeout answered DeadlineExceeded: the work still runs),
	// so that Expire only bounds how long a crashed process keeps a key: a
	// method slower than Expire never runs beside its duplicate. The
	// method's context is also cancelled when the hold is lost. A method
	// that returns within a third of Expire costs only a timer (no renewal
	// is sent). Without renewal, a method slower than Expire lets a
	// duplicate run beside it.
	DisableRenew bool `json:",optional"`
	// MaxHold bounds the renewal, counted from the acquisition: a method
	// still running after it has its context cancelled
	// (zerolock.ErrMaxHold), its hold ends at its expiry, and that is
	// logged and counted (holds_lost_total, cause max_hold), so a hung
	// method cannot hold its key forever. The default is 10 × the rule's
	// Expire (50s at the default 5s); it must be at least Expire.
	MaxHold time.Duration `json:",optional"`
	// Fence mints a fencing token per acquisition, which the method reads
	// with zerolock.FenceFromContext. It cannot be combined with replay
	// mode, whose acquisition mints no token.
	Fence bool `json:",optional"`
	// RejectCode is the gRPC code of a refused duplicate (inflight, window
	// and replay modes), spelled as codes.Code.String() spells it
	// (FailedPrecondition) or in UPPER_SNAKE (FAILED_PRECONDITION); the
	// default is Aborted. OK and the codes go-zero's zrpc breakers count as
	// failures of the server (DeadlineExceeded, Internal, Unavailable,
	// DataLoss, Unimplemented, ResourceExhausted) are refused at start-up. dtm reads Aborted as a failure of the business
	// and rolls the global transaction back, FailedPrecondition as "still
	// running" and retries later: see the README's "With dtm".
	RejectCode string `json:",optional"`
	// Message is the message of a refused duplicate's status, instead of
	// the default English one (请勿重复提交, say), and of limit and rate
	// mode's refusals; a rule's Message wins.
	Message string `json:",optional"`
	// Wait, in replay mode, lets a duplicate that arrives while the first
	// call runs wait up to Wait for its result, woken when it is stored,
	// and get it replayed, as a later retry would; one still waiting at
	// Wait is refused as without it. 0 (the default) refuses at once.
	Wait time.Duration `json:",optional"`
	// SharedKeys says that the rules' keys are shared by different callers
	// on purpose. Without it a replay rule must have a key that names the
	// caller (ctx:, or metadata:authorization), so that a stored result is
	// only ever replayed to the caller that made the first call: one
	// without is refused with an error wrapping ErrBadConfig. In the other
	// modes it silences the warning for rules without a per-caller key.
	SharedKeys bool `json:",optional"`
	// Rules say which methods are locked and on which values. A method
	// without a rule passes through untouched.
	Rules []LockRule `json:",optional"`
}

// LockRule locks one method.
type LockRule struct {
	// Method is the full method name, /package.Service/Method.
	Method string
	// Keys are the source:name specs whose values identify a call.
	Keys []string `json:",optional"`
	// Expire overrides LockConf.Expire for this method.
	Expire time.Duration `json:",optional"`
	// Mode overrides LockConf.Mode for this method.
	Mode string `json:",optional,options=inflight|window|replay|limit|rate"`
	// Permits overrides LockConf.Permits for this method (limit mode
	// only): how many calls of one key run at once. Limit mode needs it
	// here or in LockConf; on a rule in another mode it is a configuration
	// error.
	Permits int `json:",optional"`
	// Quota overrides LockConf.Quota for this method (rate mode only): how
	// many calls of one key are admitted in any Period-long window. Rate
	// mode needs it, of at least 1, here or in LockConf; on a rule in
	// another mode it is a configuration error.
	Quota int `json:",optional"`
	// Period overrides LockConf.Period for this method (rate mode only):
	// the window Quota counts in, at least 1ms. Rate mode needs it here or
	// in LockConf; on a rule in another mode it is a configuration error.
	Period time.Duration `json:",optional"`
	// Retain overrides LockConf.Retain for this method, in replay mode.
	Retain time.Duration `json:",optional"`
	// DisableRenew turns renewal off for this method (see
	// LockConf.DisableRenew).
	DisableRenew bool `json:",optional"`
	// MaxHold overrides LockConf.MaxHold for this method.
	MaxHold time.Duration `json:",optional"`
	// Fingerprint lists the key specs whose values must be the same for a
	// retry to count as the same call, in replay mode: a retry under the
	// same key with other values is refused with codes.InvalidArgument.
	// They are read as Keys are, and a missing one is refused the same way.
	// Empty, the fingerprint is the whole request message in its canonical
	// form (unknown fields ignored at every level).
	Fingerprint []string `json:",optional"`
	// RejectCode overrides LockConf.RejectCode for this method. On a rule
	// in rate mode it is also the code of a call over the rate, which is
	// Aborted otherwise (LockConf.RejectCode is a duplicate's only).
	RejectCode string `json:",optional"`
	// Message overrides LockConf.Message for this method.
	Message string `json:",optional"`
	// Wait overrides LockConf.Wait for this method (replay mode only).
	Wait time.Duration `json:",optional"`
	// SharedKeys says that this method's keys are shared by different
	// callers on purpose (see LockConf.SharedKeys). It adds to the
	// configuration's: a rule cannot unset a LockConf.SharedKeys that is
	// true.
	SharedKeys bool `json:",optional"`
	// SkipMethodCheck accepts a Method that no service linked into the
	// binary declares, for methods served by code registered at run time,
	// such as a dynamicpb service or a proxy; its field paths are then
	// checked on the method's first call. Without it such a rule is a
	// configuration error: it would lock nothing, silently.
	SkipMethodCheck bool `json:",optional"`
}
