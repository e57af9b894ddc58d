// Command bench compares zerolock with its peers (go-zero's RedisLock,
// github.com/bsm/redislock, github.com/go-redsync/redsync/v4) and with the
// raw floor of any Redis lock (SET NX PX, then an EVALSHA compare-and-delete
// on the same go-redis client), against one redis-server it starts on a
// loopback port (or -addr); and, on a Valkey 9 server it starts through the
// wrapper scripts/sid-servers.sh writes (make deps), the release by DELIFEQ
// against the script (its rows are skipped, with the reason in the report,
// when there is no such server). Every contender runs in the same process, in
// turn, over several interleaved rounds, so a ratio holds even when the
// machine's speed drifts. It writes docs/BENCHMARKS.md and its chart.
//
//	make bench        # or: cd bench && go run . -out ../docs
//
// For a quick look at a few rows, -only runs just the scenarios whose name
// contains its argument and prints their table, for example the gRPC
// client interceptor's with and without it:
//
//	cd bench && go run . -only "client interceptor" -rounds 3
//
// Runs of a second or two still move by several per cent with the
// machine's speed. -interleave measures each pairing (the drop-in against
// go-zero's RedisLock, zerolock against the floor) in one process, every
// goroutine switching sides every 100 ms, for the given time in each
// order, and prints the ratio with its standard error (about 1 % in 20 s)
// and each side's client and Redis CPU per cycle:
//
//	make bench-interleave   # or: cd bench && go run . -interleave 20s
//
// It is a separate module so the library never depends on its competitors.
package main
