package interceptor_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/zeromicro/go-zero/core/logx"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/testpb"
)

// A replay rule none of whose keys names the caller (a ctx: value an auth
// interceptor put there, or the authorization metadata) is refused at
// start-up: Bob could send the order id of Alice's payment and be handed
// her stored result. The error names the fix and the opt-out, SharedKeys.
func TestReplayRefusesKeysWithoutCaller(t *testing.T) {
	for _, tc := range []struct {
		keys     []string
		accepted bool
	}{
		{[]string{"field:order.id"}, false},
		{[]string{"field:order.id", "metadata:x-user-id"}, false},
		{[]string{"field:order.id", "metadata:x-idempotency-key", "peer"}, false},
		{[]string{"field:order.id", "ctx:userId"}, true},
		{[]string{"field:order.id", "ctx:tenant"}, true},
		{[]string{"field:order.id", "metadata:authorization"}, true},
	} {
		t.Run(strings.Join(tc.keys, ","), func(t *testing.T) {
			byRule := interceptor.LockRule{Method: payMethod, Keys: tc.keys, Mode: interceptor.ModeReplay}
			err := build(t, byRule)
			if tc.accepted {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantBadConfig(t, err, "names the caller", "ctx:", "metadata:authorization", "SharedKeys: true")
			_, err = interceptor.UnaryServerInterceptor(replayConf(tc.keys...), newStore(redistest.Start(t)))
			wantBadConfig(t, err, "names the caller", "ctx:", "metadata:authorization", "SharedKeys: true")
		})
	}
}

// payAs calls Pay as user through the authenticate interceptor and returns
// the answer with its header metadata.
func payAs(client testpb.PaymentsClient, user string, req *testpb.PayRequest) (*testpb.PayReply, metadata.MD, error) {
	var header metadata.MD
	resp, err := client.Pay(withUser(user), req, grpc.Header(&header))
	return resp, header, err
}

// With the caller in the key (ctx:userId, put in the context by an auth
// interceptor before the lock), a stored result is only ever replayed to
// the caller that made the first call: Bob, sending the request of Alice's
// payment, gets a payment of his own through a zrpc server, never Alice's
// result, and Alice's retry still gets hers replayed.
func TestReplayKeyIsPerCaller(t *testing.T) {
	impl := newLedger()
	lock := interceptor.MustUnaryServerInterceptor(replayConf("field:order.id", "ctx:userId"), newStore(redistest.Start(t)))
	client := serveZrpc(t, impl, authenticate, lock)

	alice, header, err := payAs(client, "alice", payment("P-1", 10))
	if err != nil || isReplayed(header) || !strings.HasPrefix(alice.GetStatus(), "paid P-1: 10, run 1") {
		t.Fatalf("Alice's payment: %v, %v (header %v); want run 1", alice, err, header)
	}
	bob, header, err := payAs(client, "bob", payment("P-1", 10))
	if err != nil || isReplayed(header) || !strings.HasPrefix(bob.GetStatus(), "paid P-1: 10, run 2") {
		t.Fatalf("Bob, with Alice's request: %v, %v (header %v); want a payment of his own, run 2, not Alice's result", bob, err, header)
	}
	for user, first := range map[string]*testpb.PayReply{"alice": alice, "bob": bob} {
		got, header, err := payAs(client, user, payment("P-1", 10))
		if err != nil || !isReplayed(header) || got.GetStatus() != first.GetStatus() {
			t.Fatalf("%s's retry: %v, %v (header %v); want %s's own result %q replayed", user, got, err, header, user, first.GetStatus())
		}
	}
	if got := impl.runs.Load(); got != 2 {
		t.Fatalf("Pay ran %d times, want twice: once for Alice, once for Bob", got)
	}
}

// SharedKeys, on the rule or the configuration, accepts a replay rule
// without a caller key, for a method whose keys are shared by different
// callers on purpose: a result stored for one caller is then replayed to
// any caller who sends the same request.
func TestReplaySharedKeys(t *testing.T) {
	byRule := replayConf("field:order.id")
	byRule.Rules[0].SharedKeys = true
	byConf := replayConf("field:order.id")
	byConf.SharedKeys = true
	for name, c := range map[string]interceptor.LockConf{"rule": byRule, "conf": byConf} {
		t.Run(name, func(t *testing.T) {
			impl := newLedger()
			client := serveZrpc(t, impl, authenticate, interceptor.MustUnaryServerInterceptor(c, newStore(redistest.Start(t))))
			alice, _, err := payAs(client, "alice", payment("S-1", 10))
			if err != nil {
				t.Fatal(err)
			}
			bob, header, err := payAs(client, "bob", payment("S-1", 10))
			if err != nil || !isReplayed(header) || bob.GetStatus() != alice.GetStatus() {
				t.Fatalf("Bob under a shared key: %v, %v (header %v); want Alice's result %q replayed", bob, err, header, alice.GetStatus())
			}
			if got := impl.runs.Load(); got != 1 {
				t.Fatalf("Pay ran %d times, want once", got)
			}
		})
	}
}

// TestSharedKeysSilenceWarning: SharedKeys, on the rule or the
// configuration, says that a rule's keys are shared by every caller on
// purpose, and the rule is not flagged, in any mode; without it the
// warning names SharedKeys.
func TestSharedKeysSilenceWarning(t *testing.T) {
	var buf bytes.Buffer
	logx.SetLevel(logx.ErrorLevel)
	logx.SetWriter(logx.NewWriter(&buf))
	t.Cleanup(logx.Disable)

	store := newStore(redistest.Start(t))
	for _, mode := range []string{interceptor.ModeInflight, interceptor.ModeWindow, interceptor.ModeReplay, interceptor.ModeLimit} {
		byRule := interceptor.LockConf{Mode: mode, Permits: 1, Rules: []interceptor.LockRule{
			{Method: payMethod, Keys: []string{"field:order.id"}, SharedKeys: true}}}
		byConf := interceptor.LockConf{Mode: mode, Permits: 1, SharedKeys: true, Rules: []interceptor.LockRule{
			{Method: payMethod, Keys: []string{"field:order.id"}}}}
		for name, c := range map[string]interceptor.LockConf{"rule": byRule, "conf": byConf} {
			buf.Reset()
			if _, err := interceptor.UnaryServerInterceptor(c, store); err != nil {
				t.Fatalf("%s, shared by the %s: %v", mode, name, err)
			}
			if strings.Contains(buf.String(), "warning") {
				t.Fatalf("%s, shared by the %s: flagged: %s", mode, name, buf.String())
			}
		}
	}
	buf.Reset()
	if err := build(t, interceptor.LockRule{Method: payMethod, Keys: []string{"field:order.id"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "has no metadata:, ctx: or peer key") || !strings.Contains(buf.String(), "SharedKeys: true") {
		t.Fatalf("a rule shared by every caller, without SharedKeys, was not flagged naming SharedKeys; log: %q", buf.String())
	}
}
