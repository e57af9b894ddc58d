package guard

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zerolock/zerolock"
)

// naming is a SemaphoreBackend that remembers the name each lock was made
// with, by key; its locks are always free.
type naming struct {
	mu    sync.Mutex
	names map[string]string
}

func (n *naming) note(kind, key string, o zerolock.LockerOptions) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.names[kind+" "+key] = o.Name
}

func (n *naming) NewLocker(key string, o zerolock.LockerOptions) zerolock.Locker {
	n.note("mutex", key, o)
	return free{}
}

func (n *naming) NewSemaphore(key string, _ int, o zerolock.LockerOptions) (zerolock.Locker, error) {
	n.note("semaphore", key, o)
	return free{}, nil
}

type free struct{}

func (free) AcquireCtx(context.Context) (bool, error) { return true, nil }

func (free) ReleaseCtx(context.Context) (bool, error) { return true, nil }

// Every lock guard makes carries the rule's label as its name, for its
// metrics and spans, never the key; the locks made only to inspect the
// backend are named zerolock:check.
func TestLocksNamedByLabel(t *testing.T) {
	const label = "POST /orders/:id"
	n := &naming{names: map[string]string{}}
	g := &Guard{Backend: n}
	ctx := context.Background()

	inflight := g.Acquire(ctx, label, "orders:1", Policy{Expire: time.Second})
	if inflight.Outcome != Acquired {
		t.Fatalf("inflight: %q", inflight.Outcome)
	}
	inflight.Lease.End(ctx, false)
	limited := g.Acquire(ctx, label, "orders:2", Policy{Expire: time.Second, Permits: 2})
	if limited.Outcome != Acquired {
		t.Fatalf("limit: %q", limited.Outcome)
	}
	limited.Lease.End(ctx, false)
	ru, err := g.Compile(label, nil, Settings{Expire: time.Second, Mode: ModeInflight, DisableRenew: true}, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	x := &exchange{}
	if g.Serve(ctx, ru, "orders:3", Fingerprint{}, x); !x.ran {
		t.Fatalf("Serve refused the request: %+v", x.refused)
	}
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	if err := g.CheckLimit(Policy{Permits: 1}); err != nil {
		t.Fatal(err)
	}

	for key, want := range map[string]string{
		"mutex orders:1":                   label,
		"semaphore orders:2" + limitSuffix: label,
		"mutex orders:3":                   label,
		"mutex " + checkName:               checkName,
		"semaphore " + checkName:           checkName,
	} {
		got, made := n.names[key]
		if !made {
			t.Errorf("no lock made on %q", key)
			continue
		}
		if got != want {
			t.Errorf("lock on %q named %q, want %q", key, got, want)
		}
	}
	if len(n.names) != 5 {
		t.Errorf("locks made on %v, want 5", n.names)
	}
}
