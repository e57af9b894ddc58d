package svc

import (
	"errors"
	"sync"
)

// ErrStaleFence is returned by FencedStore.Put for a write whose fencing
// token is older than one the store has already accepted for the key.
var ErrStaleFence = errors.New("stale fencing token: a newer lock holder has written")

// FencedStore stands in for the storage a lock protects: a database whose
// writes are conditional on the fencing token, as in
//
//	UPDATE reports SET body = ?, fence = ? WHERE id = ? AND fence <= ?
//
// A holder whose lock expired while it was paused (a GC pause, a slow
// disk) carries an older token than the holder that took over, so its
// late write is refused instead of overwriting the newer one.
type FencedStore struct {
	mu   sync.Mutex
	rows map[string]fencedRow
}

type fencedRow struct {
	value string
	fence int64
}

// NewFencedStore returns an empty store.
func NewFencedStore() *FencedStore {
	return &FencedStore{rows: make(map[string]fencedRow)}
}

// Put writes value for key unless a write with a greater token was
// accepted before; it returns ErrStaleFence then. The same token may write
// again: one holder may update its work.
func (s *FencedStore) Put(key, value string, fence int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if row, ok := s.rows[key]; ok && fence < row.fence {
		return ErrStaleFence
	}
	s.rows[key] = fencedRow{value: value, fence: fence}
	return nil
}

// Get returns key's value and the token that wrote it.
func (s *FencedStore) Get(key string) (string, int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	row, ok := s.rows[key]
	return row.value, row.fence, ok
}
