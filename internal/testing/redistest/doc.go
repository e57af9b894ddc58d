// Package redistest starts real redis-server processes on free loopback
// ports for tests, and stops them when the test ends.
//
// A test that needs Redis calls Start:
//
//	srv := redistest.Start(t)
//	client := srv.Client(t)
//
// When redis-server is not installed the test is skipped, unless the
// environment sets ZEROLOCK_REQUIRE_REDIS=1 (make test does), in which case
// it fails: CI must never pass by skipping the real-server tests.
//
// Start runs the redis-server on PATH (Debian 12's 7.0). StartFlavour runs
// another kind of server, Valkey 9 or Redis 8 from Debian sid (make deps
// fetches them with scripts/sid-servers.sh), and EachFlavour runs one test
// body on each:
//
//	redistest.EachFlavour(t, func(t *testing.T, srv *redistest.Server) {
//		t.Logf("on %s", srv.Version()) // "valkey 9.1.2"
//		client := srv.Client(t)
//	})
package redistest
