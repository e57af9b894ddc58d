// Package bench compares zerolock with its peers (github.com/bsm/redislock,
// github.com/go-redsync/redsync/v4) against one real redis-server on a
// loopback port, in one run, so that ratios hold however fast the machine
// is. It is a separate module so the library never depends on its
// competitors.
//
//	cd bench && go test -run '^$' -bench . -benchtime 1x
package bench
