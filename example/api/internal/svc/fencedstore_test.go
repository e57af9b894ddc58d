package svc

import (
	"errors"
	"testing"
)

func TestFencedStoreRejectsStaleWrites(t *testing.T) {
	s := NewFencedStore()
	for _, tc := range []struct {
		fence int64
		stale bool
	}{{3, false}, {3, false}, {5, false}, {4, true}, {1, true}, {6, false}} {
		err := s.Put("r", "v", tc.fence)
		if tc.stale != errors.Is(err, ErrStaleFence) {
			t.Fatalf("Put with fence %d: %v, stale = %v", tc.fence, err, tc.stale)
		}
	}
	if _, fence, _ := s.Get("r"); fence != 6 {
		t.Fatalf("row written by fence %d, want 6", fence)
	}
}
