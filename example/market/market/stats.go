package market

import (
	"sync/atomic"
	"time"
)

// Stats is what contention has cost a Market.
type Stats struct {
	// List and Buy are the costs of each operation.
	List, Buy OpStats
	// LocksLost counts Pessimistic operations whose lock had expired by
	// the time they released it: their updates ran, but possibly while
	// another holder had the lock. It stays 0 unless an operation outlived
	// WithLockExpiry.
	LocksLost int64
}

// OpStats is what contention has cost one kind of operation.
type OpStats struct {
	// Retries counts Optimistic transactions aborted by a conflicting
	// write and run again.
	Retries int64
	// Waits counts Pessimistic lock acquisitions that found the lock held
	// and had to wait for it.
	Waits int64
	// WaitTime is the time Pessimistic operations spent waiting for locks.
	WaitTime time.Duration
}

type opCounters struct {
	retries, waits, waitNanos atomic.Int64
}

func (c *opCounters) snapshot() OpStats {
	return OpStats{
		Retries:  c.retries.Load(),
		Waits:    c.waits.Load(),
		WaitTime: time.Duration(c.waitNanos.Load()),
	}
}
