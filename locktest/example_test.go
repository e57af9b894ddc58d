package locktest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/locktest"
)

// chargeOnce is code under test: it runs charge unless another request
// for the same order holds the order's lock.
func chargeOnce(ctx context.Context, backend zerolock.Backend, order string, charge func()) (bool, error) {
	lock := backend.NewLocker("charge:"+order, zerolock.LockerOptions{Expiry: 10 * time.Second})
	if ok, err := lock.AcquireCtx(ctx); !ok || err != nil {
		return false, err
	}
	defer func() { _, _ = lock.ReleaseCtx(ctx) }()
	charge()
	return true, nil
}

// A test hands the memory backend to the code under test in place of a
// lock service, and checks that a second request for an order that is
// being charged does not charge it again.
func ExampleNewMemoryBackend() {
	backend := locktest.NewMemoryBackend()
	ctx := context.Background()
	charged, err := chargeOnce(ctx, backend, "42", func() {
		again, err := chargeOnce(ctx, backend, "42", func() { fmt.Println("charged twice") })
		fmt.Println("second request charged:", again, err)
	})
	fmt.Println("first request charged:", charged, err)
	// Output:
	// second request charged: false <nil>
	// first request charged: true <nil>
}
