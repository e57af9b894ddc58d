// Package etcdtest starts a real etcd server (Debian's etcd-server, found
// as etcd on the PATH) on free loopback ports for tests, once per test
// binary, and stops it when the binary's tests end.
//
// A package that tests against etcd runs its tests through Main and takes
// the shared server in each test:
//
//	func TestMain(m *testing.M) { etcdtest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		client := etcdtest.Shared(t).Client(t)
//		...
//	}
//
// When etcd is not installed the tests that need it are skipped, unless the
// environment sets ZEROLOCK_REQUIRE_REDIS=1 (make test does), in which case
// they fail, as redistest does for redis-server: CI must never pass by
// skipping the real-server tests.
package etcdtest
