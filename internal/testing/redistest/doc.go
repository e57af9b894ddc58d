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
package redistest
