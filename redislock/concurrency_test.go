package redislock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// TestOneInstanceFromManyGoroutines: goroutines sharing one fresh lock all
// get true, as with go-zero's lock, even though the first of them goes the
// SET NX way and may find the key already holding its own token.
func TestOneInstanceFromManyGoroutines(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		const trials, goroutines = 200, 8
		for trial := 0; trial < trials; trial++ {
			lock := b.newLock(key)
			lock.SetExpire(5)
			var wg sync.WaitGroup
			refused := make(chan error, goroutines)
			for g := 0; g < goroutines; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if ok, err := lock.Acquire(); !ok || err != nil {
						refused <- err
					}
				}()
			}
			wg.Wait()
			close(refused)
			for err := range refused {
				t.Fatalf("trial %d: a goroutine sharing the holding instance got false (err %v)", trial, err)
			}
			mustRelease(t, lock, true)
		}
	})
}

// lostReplyStore runs SET NX on the server but reports a failure, as a
// reply lost to a timeout would.
type lostReplyStore struct {
	*redis.Client
}

var errLostReply = errors.New("reply lost")

func (s lostReplyStore) SetNX(ctx context.Context, key string, value any, exp time.Duration) *redis.BoolCmd {
	cmd := s.Client.SetNX(ctx, key, value, exp)
	cmd.SetErr(errLostReply)
	return cmd
}

// TestUnknownOutcomeIsSettledByNextCall: after an acquire whose reply was
// lost (it did take the key), the next acquire recognises its own token and
// the release deletes it.
func TestUnknownOutcomeIsSettledByNextCall(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	lock := redislock.New(lostReplyStore{srv.Client(t)}, "zerolock-test:lost-reply")
	lock.SetExpire(5)
	if ok, err := lock.Acquire(); ok || !errors.Is(err, errLostReply) {
		t.Fatalf("Acquire with a lost reply = %v, %v; want false and the error", ok, err)
	}
	if admin.Exists(context.Background(), "zerolock-test:lost-reply").Val() != 1 {
		t.Fatal("the lost-reply acquire did not take the key")
	}
	mustAcquire(t, lock, true) // the script sees our token: re-entrant
	mustRelease(t, lock, true)
	if admin.Exists(context.Background(), "zerolock-test:lost-reply").Val() != 0 {
		t.Fatal("release left the key")
	}
}
