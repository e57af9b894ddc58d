package etcdlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/zeromicro/go-zero/rest"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zerolock/zerolock/etcdlock"
	"github.com/zerolock/zerolock/middleware"
)

// Try once, and release on the way out. (No output: it needs an etcd.)
func Example() {
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: 5 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	ctx := context.Background()
	lock := etcdlock.New(client, "stock:sku-1", etcdlock.WithExpiry(5*time.Second))
	ok, err := lock.AcquireCtx(ctx)
	switch {
	case err != nil:
		fmt.Println("etcd failed:", err)
		return
	case !ok:
		fmt.Println("busy: another deduction is running")
		return
	}
	defer lock.ReleaseCtx(context.WithoutCancel(ctx))
	fmt.Println("deducting under fencing token", lock.Fence())
}

// Wait in line for the lock, and keep it alive while slow work runs: the
// work's context ends if the lock is lost.
func ExampleLock_AcquireWaitCtx() {
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: 5 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	ctx := context.Background()
	lock := etcdlock.New(client, "report:2026-11", etcdlock.WithExpiry(10*time.Second))
	ok, err := lock.AcquireWaitCtx(ctx, 30*time.Second)
	if err != nil || !ok {
		fmt.Println("not acquired within 30s:", err)
		return
	}
	defer lock.ReleaseCtx(context.WithoutCancel(ctx))
	work := lock.Watch(ctx)
	select {
	case <-work.Done():
		fmt.Println("stopped:", context.Cause(work)) // zerolock.ErrLockLost, ErrRenewFailed...
	case <-time.After(time.Minute): // the slow work
		fmt.Println("report built")
	}
}

// The anti-double-click middleware on etcd instead of Redis.
func ExampleNewBackend() {
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: 5 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	var c middleware.LockConf // from the service's YAML
	m, err := middleware.NewLockMiddlewareWithBackend(c, etcdlock.NewBackend(client, etcdlock.WithPrefix("/locks/")))
	if err != nil {
		fmt.Println(err) // bad rules fail here, at start-up
		return
	}
	server := rest.MustNewServer(rest.RestConf{})
	server.Use(m.Handle) // then add the routes and server.Start()
}
