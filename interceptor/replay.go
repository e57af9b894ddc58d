package interceptor

import (
	"context"
	"fmt"

	"github.com/zeromicro/go-zero/core/logx"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/zerolock/zerolock/internal/guard"
	"github.com/zerolock/zerolock/internal/keyspec"
	"github.com/zerolock/zerolock/internal/replay"
)

// ReplayedHeader is the header metadata key, set to "true", of an answer
// that replay mode served from a stored result instead of running the
// method.
const ReplayedHeader = "idempotent-replayed"

// errReused answers a call whose key holds another request's result.
var errReused = status.Error(codes.InvalidArgument,
	"zerolock: the idempotency key was reused with a different request")

// The refusals of a retry whose stored result cannot be replayed: Aborted
// with RetryInfo, as for a duplicate, never a code zrpc's breakers count.
const (
	msgUnreadable = "zerolock: the first call's result cannot be replayed, so its retries are refused until it expires"
	msgNotKept    = "zerolock: the first call's result was too large to keep, so its retries are refused until it expires"
)

// callFingerprint identifies the request a stored result answers: the
// method and the rule's Fingerprint values, or the whole request message
// in its canonical form.
func callFingerprint(ctx context.Context, ru *rule, fields map[int]*fieldPath,
	msg protoreflect.Message) ([replay.FingerprintSize]byte, error) {
	var fingerprint [replay.FingerprintSize]byte
	hs := keyspec.NewHasher()
	hs.AddString(keyspec.String, ru.method)
	if ru.fpWhole {
		addCanonical(hs, msg)
	} else if err := addSpecs(ctx, hs, ru.fingerprint, fields, msg); err != nil {
		hs.Discard()
		return fingerprint, err
	}
	return hs.Sum(), nil
}

// runAndRecord runs the method under a replay-mode lease and keeps its
// result in place of the lock before the answer goes out, so that a retry
// sent the moment the answer arrives is replayed. A panic, and an answer
// that is not kept, release the lock: the retry runs again.
func (l *locker) runAndRecord(ctx context.Context, ru *rule, key string, fingerprint [replay.FingerprintSize]byte,
	res guard.Result, req any, handler grpc.UnaryHandler) (any, error) {
	returned := false
	defer func() {
		if !returned {
			res.Lease.End(ctx, false)
		}
	}()
	resp, err := handler(res.Ctx, req)
	returned = true

	r, kept, problem := resultOf(resp, err)
	if problem != nil {
		logx.WithContext(ctx).Errorf("zerolock: the result of %s (key …%s) cannot be kept, so a retry runs again: %v",
			ru.method, keyspec.Digest(key), problem)
	}
	if !kept {
		res.Lease.End(ctx, false)
		return resp, err
	}
	rec := replay.Record{Kind: recordKind, Fingerprint: fingerprint, Payload: r.encode()}
	if len(rec.Payload) > maxResultBytes {
		// The work happened: running it again is what replay mode exists
		// to prevent, so its retries are refused instead.
		logx.WithContext(ctx).Errorf("zerolock: the result of %s (key …%s) is %d bytes, over the %d a kept result may have: "+
			"its retries are refused until Retain passes", ru.method, keyspec.Digest(key), len(rec.Payload), maxResultBytes)
		rec.Payload, rec.Unreplayable = nil, true
	}
	// The client may have left; the result is kept all the same (Record
	// does not end with the call's context).
	res.Lease.Record(ctx, replay.Encode(rec))
	return resp, err
}

// replay answers a call whose key holds a stored result: with that result
// when the call is the same request, marked by ReplayedHeader; with
// errReused when it is another; with errUnreadable, logged, when the
// record cannot be read.
func (l *locker) replay(ctx context.Context, ru *rule, key string, fingerprint [replay.FingerprintSize]byte,
	stored []byte) (any, error) {
	rec, err := replay.Decode(stored, maxResultBytes)
	if err == nil && rec.Kind != recordKind {
		err = fmt.Errorf("%w: kind %q, not a gRPC result", replay.ErrBadRecord, rec.Kind)
	}
	if err != nil {
		return nil, l.unreadable(ctx, ru, key, err)
	}
	if rec.Fingerprint != fingerprint {
		l.guard.Count(ru.method, guard.Mismatch)
		return nil, errReused
	}
	if rec.Unreplayable {
		l.guard.Count(ru.method, guard.Rejected)
		return nil, refusal(msgNotKept, l.guard.StoredRetryAfter(ctx, ru.method, key, ru.policy))
	}
	r, err := decodeResult(rec.Payload)
	if err != nil {
		return nil, l.unreadable(ctx, ru, key, err)
	}
	resp, st, err := r.answer(ru.output)
	if err != nil {
		return nil, l.unreadable(ctx, ru, key, err)
	}
	l.guard.Count(ru.method, guard.Replayed)
	// Fails only outside a gRPC server's call, where there is no header.
	_ = grpc.SetHeader(ctx, metadata.Pairs(ReplayedHeader, "true"))
	if st != nil {
		return nil, st.Err()
	}
	return resp, nil
}

// unreadable logs a record that cannot be read and returns the call's
// answer. The record is left alone: it may be a later format's, and it
// expires with Retain.
func (l *locker) unreadable(ctx context.Context, ru *rule, key string, err error) error {
	l.guard.Count(ru.method, guard.StoreError)
	logx.WithContext(ctx).Errorf("zerolock: the stored result of %s (key …%s) cannot be read, "+
		"so its calls are refused until it expires: %v", ru.method, keyspec.Digest(key), err)
	return refusal(msgUnreadable, l.guard.StoredRetryAfter(ctx, ru.method, key, ru.policy))
}
