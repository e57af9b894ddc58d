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

// flawedOptions are what a flawedBackend claims: what the memory backend
// claims (see memoryOptions in memory_test.go), so that each failure comes
// from the flaw alone.
var flawedOptions = Options{
	Expiry: 300 * time.Millisecond,
	Slack:  2 * time.Second,
	Waiter: true, TTLer: true, Watcher: true, Fencer: true, Refresher: true,
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
	Run(t, func(*testing.T) zerolock.Backend { return newFlawedBackend(f) }, flawedOptions)
}

// TestSuiteCatchesBrokenBackends: for each deliberate violation of the
// contract, the suite fails, and names the check that guards it; the
// memory backend without a flaw passes (TestConformanceMemory), so the
// suite asks nothing the contract does not. The
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
