package market

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

type redisCmd = redis.Cmdable

func TestParseListing(t *testing.T) {
	for _, tc := range []struct {
		member, item, seller string
		ok                   bool
	}{
		{"i1.u2", "i1", "u2", true},
		{"i1.shop.eu", "i1", "shop.eu", true},
		{"nodot", "nodot", "", false},
	} {
		item, seller, ok := ParseListing(tc.member)
		if item != tc.item || seller != tc.seller || ok != tc.ok {
			t.Errorf("ParseListing(%q) = %q, %q, %v", tc.member, item, seller, ok)
		}
	}
	if m := Listing("i1", "u2"); m != "i1.u2" {
		t.Errorf("Listing = %q", m)
	}
}

func TestGranularity(t *testing.T) {
	for _, g := range granularities {
		back, err := ParseGranularity(g.String())
		if err != nil || back != g {
			t.Errorf("ParseGranularity(%q) = %v, %v", g, back, err)
		}
	}
	if _, err := ParseGranularity("shelf"); err == nil {
		t.Error("ParseGranularity accepted shelf")
	}
}

func TestPercentile(t *testing.T) {
	var l Latencies
	if l.Percentile(50) != 0 {
		t.Error("percentile of nothing is not 0")
	}
	for i := 1; i <= 100; i++ {
		l = append(l, time.Duration(i))
	}
	for p, want := range map[float64]time.Duration{50: 50, 99: 99, 100: 100, 1: 1, 0: 1} {
		if got := l.Percentile(p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
}

func TestReason(t *testing.T) {
	for _, tc := range []struct {
		err    error
		reason string
		known  bool
	}{
		{fmt.Errorf("wrapped: %w", ErrNotListed), "not listed", true},
		{ErrTooManyRetries, "too many retries", true},
		{ErrLockTimeout, "lock timeout", true},
		{context.Canceled, "context ended", false},
		{errors.New("connection reset"), "redis error", false},
	} {
		if reason, known := Reason(tc.err); reason != tc.reason || known != tc.known {
			t.Errorf("Reason(%v) = %q, %v", tc.err, reason, known)
		}
	}
}
