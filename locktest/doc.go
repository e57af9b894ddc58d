// Package locktest checks an implementation of the zerolock contract: it
// is the one conformance suite that every Backend runs, in the manner of
// testing/fstest.TestFS and golang.org/x/net/nettest.TestConn.
//
// A backend's test hands Run a constructor and says what its deployment
// claims, as redislock's tests do for a Redis store:
//
//	func TestConformanceRedisNode(t *testing.T) {
//		client := startRedis(t) // the test's own server
//		locktest.Run(t, func(t *testing.T) zerolock.Backend {
//			return redislock.NewBackend(client)
//		}, locktest.Options{Waiter: true, TTLer: true, Watcher: true, Fencer: true})
//	}
//
// Run runs each check as a subtest of its own (MutualExclusion,
// BusyIsNotAnError, ReleaseByNonHolder, Expiry, Waiter/WokenByRelease and
// so on), each on keys of its own, so a failure names the guarantee that
// broke. The optional abilities (Waiter, TTLer, Watcher, Refresher,
// Fencer) are checked when Options claims them, and a claim that the
// Lockers do not back, or an ability they have that is not claimed, fails
// the suite.
//
// NewMemoryBackend is a Backend that keeps its locks in memory and passes
// the whole suite: code that takes a zerolock.Backend can be tested with it
// and no lock service, as code that takes an fs.FS with fstest.MapFS.
//
// Like testing/fstest, the package is a test kit that ships with the
// library, so that a third party's Backend can run the suite too: it
// imports the contract (package zerolock) and the standard library only,
// no lock service, server starter or transport.
package locktest
