package main

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// connect returns a client of the Redis at addr, or of an embedded
// miniredis when addr is empty, a description of it for the report, and
// a function that closes the client and stops the miniredis.
func connect(addr string) (*redis.Client, string, func(), error) {
	var embedded *miniredis.Miniredis
	desc := "redis at " + addr
	if addr == "" {
		embedded = miniredis.NewMiniRedis()
		if err := embedded.StartAddr("127.0.0.1:0"); err != nil {
			return nil, "", nil, fmt.Errorf("start the embedded miniredis: %w", err)
		}
		addr, desc = embedded.Addr(), "embedded miniredis (figures say little about Redis)"
	}
	// Enough connections for every trader plus the waiters' subscription;
	// miniredis rejects CLIENT SETINFO, which the client would send on
	// every new connection.
	client := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 256, DisableIdentity: true})
	closeAll := func() {
		_ = client.Close()
		if embedded != nil {
			embedded.Close()
		}
	}
	if err := client.Ping(context.Background()).Err(); err != nil {
		closeAll()
		return nil, "", nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	return client, desc, closeAll, nil
}
