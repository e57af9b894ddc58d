package zerolock

import "time"

// A WatchOption tunes a Watcher's Watch.
type WatchOption func(*WatchSettings)

// WatchSettings are what a list of WatchOptions sets, for implementations
// of Watcher; zero means unset.
type WatchSettings struct {
	// RenewEvery is how often to renew; unset, a third of the expiry, so
	// two renewals in a row may fail before the hold is at risk.
	RenewEvery time.Duration
	// MaxHold bounds how long the hold is kept alive; unset, no bound.
	MaxHold time.Duration
}

// RenewEvery sets how often the watchdog renews; the default is a third of
// the lock's expiry. A service that renews by itself (ZooKeeper's session)
// ignores it.
func RenewEvery(d time.Duration) WatchOption {
	return func(s *WatchSettings) {
		s.RenewEvery = d
	}
}

// MaxHold bounds how long the watchdog keeps the lock alive: after d it
// stops renewing and cancels the context with ErrMaxHold, so a stuck task
// cannot hold a resource forever. The default is no bound.
func MaxHold(d time.Duration) WatchOption {
	return func(s *WatchSettings) {
		s.MaxHold = d
	}
}

// ApplyWatchOptions returns the settings opts make.
func ApplyWatchOptions(opts ...WatchOption) WatchSettings {
	var s WatchSettings
	for _, opt := range opts {
		opt(&s)
	}
	return s
}
