package lockobs

import (
	"context"
	"time"

	oteltrace "go.opentelemetry.io/otel/trace"
)

// Held records a hold that ended by release, held for d.
func (in *Instruments) Held(d time.Duration) {
	if in != nil && MetricsEnabled() {
		in.hold.Observe(d.Seconds())
	}
}

// ReleasedGone records a release that found the lock already gone (expired,
// or taken by another): a sign that the expiry is too short.
func (in *Instruments) ReleasedGone() {
	if in != nil && MetricsEnabled() {
		in.releasedGone.Inc()
	}
}

// A Watch is the observation of one watched hold: its renewals, their
// failures and the loss, as metrics and as events on the span the watch
// began under.
type Watch struct {
	in   *Instruments
	span oteltrace.Span // nil unless that span was recording
}

// StartWatch begins observing a watched hold; ctx is Watch's context.
func (in *Instruments) StartWatch(ctx context.Context) Watch {
	if in == nil {
		return Watch{}
	}
	w := Watch{in: in}
	if tracingEnabled() {
		if s := oteltrace.SpanFromContext(ctx); s.IsRecording() {
			w.span = s
		}
	}
	return w
}

// Renewed records a successful renewal.
func (w Watch) Renewed() {
	if w.in != nil && MetricsEnabled() {
		w.in.renewals.Inc()
	}
}

// RenewFailed records a renewal that failed with err (the lock service did
// not answer); the hold may still be valid.
func (w Watch) RenewFailed(err error) {
	if w.in == nil {
		return
	}
	if MetricsEnabled() {
		w.in.renewFailed.Inc()
	}
	if w.span != nil {
		w.span.AddEvent("zerolock.renew_failed", oteltrace.WithAttributes(
			append(w.in.attrs[:len(w.in.attrs):len(w.in.attrs)], attrError.String(err.Error()))...))
	}
}

// Lost records the loss of the watched hold, and why.
func (w Watch) Lost(cause Cause) {
	if w.in == nil {
		return
	}
	if MetricsEnabled() {
		w.in.lost[causeIndex(cause)].Inc()
	}
	if w.span != nil {
		w.span.AddEvent("zerolock.lock_lost", oteltrace.WithAttributes(
			append(w.in.attrs[:len(w.in.attrs):len(w.in.attrs)], attrCause.String(string(cause)))...))
	}
}
