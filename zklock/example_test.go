package zklock_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zerolock/zerolock/middleware"
	"github.com/zerolock/zerolock/zklock"
)

// Waiting for a lock on ZooKeeper and keeping it while the work runs.
func ExampleLock_AcquireWaitCtx() {
	conn, _, err := zk.Connect([]string{"127.0.0.1:2181"}, 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	lock := zklock.New(conn, "report:2024-06", zklock.WithExpiry(30*time.Second))
	ctx := context.Background()
	ok, err := lock.AcquireWaitCtx(ctx, 5*time.Second)
	if err != nil || !ok {
		log.Printf("report already being built: %v", err)
		return
	}
	defer lock.Release()
	work := lock.Watch(ctx) // ends if the lock is lost: stop writing then
	fmt.Println("building with fencing token", lock.Fence(), work.Err())
}

// The REST middleware taking its locks from ZooKeeper.
func ExampleNewBackend() {
	conn, _, err := zk.Connect([]string{"127.0.0.1:2181"}, 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	conf := middleware.LockConf{
		Expire: 5 * time.Second,
		Rules:  []middleware.LockRule{{Method: "POST", Path: "/orders", Keys: []string{"claim:userId", "json:orderId"}}},
	}
	m, err := middleware.NewLockMiddlewareWithBackend(conf, zklock.NewBackend(conn, zklock.WithRoot("/myapp/locks")))
	if err != nil {
		log.Fatal(err)
	}
	_ = m // server.Use(m.Handle)
}
