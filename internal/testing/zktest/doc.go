// Package zktest starts a real ZooKeeper server (Debian's zookeeper
// package, run with java) on a free loopback port for tests, once per test
// binary, and gives tests quiet connections to it.
//
//	func TestMain(m *testing.M) { zktest.Main(m) }
//
//	func TestX(t *testing.T) {
//		conn := zktest.Shared(t).Connect(t, 10*time.Second)
//		...
//	}
//
// When java or the ZooKeeper jars are missing the test is skipped, unless
// the environment sets ZEROLOCK_REQUIRE_REDIS=1 (make test does), in which
// case it fails, as with internal/redistest.
package zktest
