package lockobs

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"

	"github.com/zerolock/zerolock/internal/testing/obstest"
)

// TestTryOutcome: a try is acquired, busy when refused, and an error
// whenever it failed.
func TestTryOutcome(t *testing.T) {
	for _, tc := range []struct {
		ok   bool
		err  error
		want Outcome
	}{
		{true, nil, Acquired},
		{false, nil, Busy},
		{false, errors.New("redis down"), Error},
		{false, context.DeadlineExceeded, Error},
	} {
		if got := TryOutcome(tc.ok, tc.err); got != tc.want {
			t.Errorf("TryOutcome(%v, %v) = %s; want %s", tc.ok, tc.err, got, tc.want)
		}
	}
}

// deadlineNotFired is a context whose deadline has passed but whose timer
// has not fired yet: Err is still nil.
type deadlineNotFired struct{ context.Context }

func (deadlineNotFired) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// TestEndWait is the one classification of a waiting acquire's answer
// that every backend reports through: the outcome it counts and what its
// span records, for each backend's errors (redislock's ErrWaitCutTry as
// CutTry, zklock's ErrZooKeeper as Failed, none for etcdlock).
func TestEndWait(t *testing.T) {
	var (
		errCut     = errors.New("the wait limit ended a try in flight")
		errService = errors.New("lock service failed")
		redis      = WaitErrors{CutTry: errCut}
		zookeeper  = WaitErrors{Failed: errService}
		etcd       = WaitErrors{}
	)
	live := context.Background()
	expired, cancel := context.WithDeadline(live, time.Now().Add(-time.Second))
	defer cancel()
	cancelled, cancel := context.WithCancel(live)
	cancel()
	later, cancel := context.WithTimeout(live, time.Hour)
	defer cancel()
	notFired := deadlineNotFired{live}
	deadline := fmt.Errorf("acquire %q: %w", "k", context.DeadlineExceeded)

	for _, tc := range []struct {
		name    string
		ctx     context.Context
		ok      bool
		err     error
		e       WaitErrors
		want    Outcome
		spanErr bool // the span records the error
	}{
		{"acquired", live, true, nil, etcd, Acquired, false},
		{"wait limit passed", live, false, nil, etcd, Timeout, false},
		{"service failed", live, false, errService, etcd, Error, true},
		{"deadline passed", expired, false, deadline, etcd, Timeout, false},
		{"deadline passed, timer not fired", notFired, false, deadline, etcd, Timeout, false},
		{"deadline error, ctx's deadline ahead", later, false, deadline, etcd, Error, true},
		{"deadline error, no deadline", live, false, deadline, etcd, Error, true},
		{"cancelled", cancelled, false, fmt.Errorf("acquire: %w", context.Canceled), etcd, Error, true},
		{"cancelled, deadline in the error", cancelled, false, deadline, etcd, Error, true},
		{"cut try", live, false, errCut, redis, Timeout, true},
		{"cut try past the deadline", expired, false, errors.Join(errCut, context.DeadlineExceeded), redis, Timeout, true},
		{"deadline passed, with CutTry set", expired, false, deadline, redis, Timeout, false},
		{"service failed past the deadline", expired, false, fmt.Errorf("%w: get: %w", errService, context.DeadlineExceeded), zookeeper, Error, true},
		{"deadline passed, with Failed set", expired, false, deadline, zookeeper, Timeout, false},
		{"service failed past the deadline, Failed unset", expired, false, fmt.Errorf("%w: get: %w", errService, context.DeadlineExceeded), etcd, Timeout, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := For("redis", "mutex", "TestEndWait")
			ctx, request, rec := obstest.Recording(t, context.Background())
			before := outcomeCounts(in)
			_, a := in.StartAcquire(ctx, true)
			a.EndWait(tc.ctx, tc.ok, tc.err, 0, tc.e)
			request.End()

			after := outcomeCounts(in)
			for _, o := range []Outcome{Acquired, Busy, Timeout, Error} {
				want := 0.0
				if o == tc.want {
					want = 1
				}
				if got := after[o] - before[o]; got != want {
					t.Errorf("acquisitions{outcome=%s} went up by %v; want %v", o, got, want)
				}
			}
			spans := rec.Ended()
			if len(spans) != 2 || spans[0].Name() != "zerolock.acquire" {
				t.Fatalf("%d spans; want the acquire's and the request's", len(spans))
			}
			acquire := spans[0]
			var outcome string
			for _, kv := range acquire.Attributes() {
				if kv.Key == attrOutcome {
					outcome = kv.Value.AsString()
				}
			}
			if outcome != string(tc.want) {
				t.Errorf("span outcome %q; want %q", outcome, tc.want)
			}
			if failed := acquire.Status().Code == codes.Error; failed != tc.spanErr {
				t.Errorf("span status %v; want an error on it: %v", acquire.Status(), tc.spanErr)
			}
			if recorded := len(acquire.Events()) > 0; recorded != tc.spanErr {
				t.Errorf("span events %v; want the error recorded: %v", acquire.Events(), tc.spanErr)
			}
		})
	}
}
