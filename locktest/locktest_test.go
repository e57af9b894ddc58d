package locktest

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zerolock/zerolock"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// memOptions are what the in-memory backend claims: everything, with
// exact expiry. 300 ms leaves the refresher check's sleeps (a quarter of
// the expiry) room for a test goroutine descheduled under -race on a
// loaded machine: at 100 ms a 75 ms stall let a refreshed hold lapse.
var memOptions = Options{
	Expiry: 300 * time.Millisecond,
	Slack:  2 * time.Second,
	Waiter: true, TTLer: true, Watcher: true, Fencer: true, Refresher: true,
}

// TestConformanceMemory: the in-memory backend without a flaw passes the
// whole suite, so the suite asks nothing the contract does not.
func TestConformanceMemory(t *testing.T) {
	backend := newMemBackend(noFlaw)
	Run(t, func(*testing.T) zerolock.Backend { return backend }, memOptions)
}

// brokenEnv selects the flaw of the backend TestHelperBroken runs the
// suite on.
const brokenEnv = "LOCKTEST_BROKEN_BACKEND"

// TestHelperBroken runs the suite on a broken in-memory backend, in the
// subprocess TestSuiteCatchesBrokenBackends starts; it is skipped
// otherwise, since it is meant to fail.
func TestHelperBroken(t *testing.T) {
	f := flaw(os.Getenv(brokenEnv))
	if f == noFlaw {
		t.Skip(brokenEnv + " is not set: this test runs in TestSuiteCatchesBrokenBackends's subprocess")
	}
	Run(t, func(*testing.T) zerolock.Backend { return newMemBackend(f) }, memOptions)
}

// TestSuiteCatchesBrokenBackends: for each deliberate violation of the
// contract, the suite fails, and names the check that guards it. The
// suite runs in a subprocess, since its failing subtests fail their
// parent.
func TestSuiteCatchesBrokenBackends(t *testing.T) {
	for _, tc := range []struct {
		flaw  flaw
		check string
	}{
		{releasesAnyone, "ReleaseByNonHolder"},
		{busyIsError, "BusyIsNotAnError"},
		{neverExpires, "Expiry"},
		{racyAcquire, "MutualExclusion"},
		{ignoresContext, "CancelledContext"},
		{lazyWatch, "Watcher/KeepsHold"},
		{hopelessWatch, "Watcher/KeepsHold"},
		{impatientWait, "Waiter/WokenByRelease"},
		{sameFence, "Fencer"},
		{refreshRetakes, "Refresher"},
	} {
		t.Run(string(tc.flaw), func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBroken$", "-test.timeout=2m")
			cmd.Env = append(os.Environ(), brokenEnv+"="+string(tc.flaw))
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("the suite on a backend that is %s: %v, want a failing exit; output:\n%s", tc.flaw, err, out)
			}
			want := "--- FAIL: TestHelperBroken/" + tc.check + " "
			if !strings.Contains(string(out), want) {
				t.Fatalf("the suite on a backend that is %s failed, but not in %s; output:\n%s", tc.flaw, tc.check, out)
			}
		})
	}
}
