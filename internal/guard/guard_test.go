package guard

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zerolock/zerolock"
)

var errStore = errors.New("store down")

// failing is a Backend whose locks always fail with err.
type failing struct{ err error }

func (f failing) NewLocker(string, zerolock.LockerOptions) zerolock.Locker { return f }

func (f failing) AcquireCtx(context.Context) (bool, error) { return false, f.err }

func (f failing) ReleaseCtx(context.Context) (bool, error) { return false, f.err }

// lateTimer is a context whose deadline has passed but whose timer has not
// fired yet: Err is still nil.
type lateTimer struct{ context.Context }

func (lateTimer) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// A store refused as misconfigured (zerolock.ErrMisconfigured, which
// redislock.ErrIdentityRejected and ErrNotSemaphore are) is not an outage:
// FailOpen does not serve its requests unlocked.
func TestFailOpenRefusesMisconfiguredStore(t *testing.T) {
	refused := fmt.Errorf("%w: set DisableIdentity: true", zerolock.ErrMisconfigured)
	g := &Guard{Backend: failing{refused}, FailOpen: true}
	res := g.Acquire(context.Background(), "label", "key", Policy{Expire: time.Second})
	if res.Outcome != StoreError || !errors.Is(res.Err, zerolock.ErrMisconfigured) {
		t.Fatalf("outcome %q, err %v; want %q with ErrMisconfigured", res.Outcome, res.Err, StoreError)
	}
}

func TestAcquireFailOpen(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		want Outcome
	}{
		{"store failure", context.Background(), FailedOpen},
		{"request cancelled", cancelled, StoreError},
		// The socket's timeout came back before the context's timer fired.
		{"deadline passed, timer not fired", lateTimer{context.Background()}, StoreError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := &Guard{Backend: failing{errStore}, FailOpen: true}
			res := g.Acquire(tc.ctx, "label", "key", Policy{Expire: time.Second})
			if res.Outcome != tc.want {
				t.Fatalf("outcome %q, want %q", res.Outcome, tc.want)
			}
			if !errors.Is(res.Err, errStore) {
				t.Fatalf("err %v, want %v", res.Err, errStore)
			}
		})
	}
}
