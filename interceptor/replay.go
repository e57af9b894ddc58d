package interceptor

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/zerolock/zerolock/internal/guard"
	"github.com/zerolock/zerolock/internal/keyspec"
)

// ReplayedHeader is the header metadata key, set to "true", of an answer
// that replay mode served from a stored result instead of running the
// method.
const ReplayedHeader = "idempotent-replayed"

// errReused answers a call whose key holds another request's result.
var errReused = status.Error(codes.InvalidArgument,
	"zerolock: the idempotency key was reused with a different request")

// The refusals of a retry whose stored result cannot be replayed: the
// rule's RejectCode (Aborted by default) with RetryInfo, as for a
// duplicate, never a code zrpc's breakers count.
const (
	msgUnreadable = "zerolock: the first call's result cannot be replayed, so its retries are refused until it expires"
	msgNotKept    = "zerolock: the first call's result was too large to keep, so its retries are refused until it expires"
)

// callFingerprint identifies the request a stored result answers: the
// method and the rule's Fingerprint values, or the whole request message
// in its canonical form.
func callFingerprint(ctx context.Context, ru *rule, fields map[int]*fieldPath,
	msg protoreflect.Message) (guard.Fingerprint, error) {
	var fingerprint guard.Fingerprint
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
