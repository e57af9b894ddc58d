// Command market runs buyers and sellers on an online market in Redis,
// implemented optimistically (WATCH/MULTI/EXEC, retried on conflict) or
// pessimistically (zerolock's waiting lock around the same MULTI), and
// reports trades per second, the retries or waits each trade cost, the
// latency of trades, the failures by reason, and the invariants checked
// at the end. It exits with status 1 when an invariant does not hold.
//
// Run it from the repository root:
//
//	go run ./example/market -mode optimistic -buyers 8 -sellers 2 -items 100 -duration 5s
//	go run ./example/market -mode pessimistic -items 1 -addr 127.0.0.1:6379
//
// Without -addr it starts an embedded miniredis (handy, but single-threaded
// Go, so its figures say little about Redis); with -addr it uses that
// server, deleting and reseeding the keys under -prefix. docs/MARKET.md
// compares the two modes on a real redis-server. The market itself is
// package market (example/market/market).
package main
