package interceptor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// oneOfTwoRuns holds one payment in the method and repeats it: the repeat
// is Aborted and the first completes.
func oneOfTwoRuns(t *testing.T, lock grpc.UnaryServerInterceptor) {
	t.Helper()
	impl := newPayments()
	impl.release = make(chan struct{})
	client := serveWith(t, lock, impl)
	first := make(chan error, 1)
	go func() {
		_, err := client.Pay(context.Background(), order("C-1"))
		first <- err
	}()
	<-impl.inside
	if _, err := client.Pay(context.Background(), order("C-1")); status.Code(err) != codes.Aborted {
		t.Fatalf("duplicate: %v, want Aborted", err)
	}
	close(impl.release)
	if err := <-first; err != nil {
		t.Fatalf("admitted call: %v", err)
	}
}

func TestRedlockBackend(t *testing.T) {
	var stores []redislock.Store
	for i := 0; i < 5; i++ {
		stores = append(stores, redistest.Start(t).Client(t))
	}
	// Redlock's locks cannot renew, and renewal is the default: refused at
	// start-up, naming the opt-out.
	c := payConf(interceptor.ModeInflight, "field:order.id")
	if _, err := interceptor.UnaryServerInterceptorWithBackend(c, redislock.NewRedLockBackend(stores)); !errors.Is(err, interceptor.ErrBadConfig) ||
		!strings.Contains(err.Error(), "DisableRenew: true") {
		t.Fatalf("default conf on Redlock: %v, want ErrBadConfig naming DisableRenew: true", err)
	}
	c.DisableRenew = true
	lock, err := interceptor.UnaryServerInterceptorWithBackend(c,
		redislock.NewRedLockBackend(stores, redislock.WithNodeTimeout(time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	oneOfTwoRuns(t, lock)
}

func TestGoZeroClusterStore(t *testing.T) {
	cluster := redistest.SharedCluster(t)
	store := zredis.MustNewRedis(zredis.RedisConf{
		Host: strings.Join(cluster.Addrs(), ","), Type: zredis.ClusterType, NonBlock: true, DisableIdentity: true,
	})
	c := payConf(interceptor.ModeInflight, "field:order.id")
	c.Renew, c.Fence = true, true
	oneOfTwoRuns(t, interceptor.MustUnaryServerInterceptor(c, store))
}
