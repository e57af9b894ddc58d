package observe

import "github.com/zerolock/zerolock/observe/lockobs"

// The backend-facing names that redislock's lock files still call here,
// until they import observe/lockobs (issue 25). Nothing else uses them.

// Instruments is lockobs.Instruments.
//
// Deprecated: backends use observe/lockobs.
type Instruments = lockobs.Instruments

// Watch is lockobs.Watch.
//
// Deprecated: backends use observe/lockobs.
type Watch = lockobs.Watch

// Cause is lockobs.Cause.
//
// Deprecated: backends use observe/lockobs.
type Cause = lockobs.Cause

// The causes of a lost lock, as lockobs names them.
//
// Deprecated: backends use observe/lockobs.
const (
	Deleted     = lockobs.Deleted
	TakenOver   = lockobs.TakenOver
	RenewFailed = lockobs.RenewFailed
	MaxHold     = lockobs.MaxHold
)

// For is lockobs.For.
//
// Deprecated: backends use observe/lockobs.
func For(backend, kind, name string) *Instruments { return lockobs.For(backend, kind, name) }
