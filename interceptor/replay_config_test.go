package interceptor_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/core/conf"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/replay"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// TestReplayConfFromYAML: the names and defaults a service's YAML uses.
func TestReplayConfFromYAML(t *testing.T) {
	var c interceptor.LockConf
	err := conf.LoadFromYamlBytes([]byte(`
Mode: replay
Rules:
  - Method: /zerolock.test.Payments/Pay
    Keys: [field:order.id, ctx:userId]
  - Method: /zerolock.test.Payments/Refund
    Keys: [field:order.id]
    SharedKeys: true
    Retain: 1h
    Fingerprint: [field:amount]
`), &c)
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != interceptor.ModeReplay || c.Retain != 24*time.Hour {
		t.Fatalf("Mode %q, Retain %v; want replay and the 24h default", c.Mode, c.Retain)
	}
	if r := c.Rules[1]; r.Retain != time.Hour || len(r.Fingerprint) != 1 || r.Fingerprint[0] != "field:amount" || !r.SharedKeys {
		t.Fatalf("rule overrides: %+v", r)
	}
	if _, err := interceptor.UnaryServerInterceptorWithBackend(c, redislock.NewBackend(redistest.Start(t).Client(t), redislock.WithoutWakeups())); err != nil {
		t.Fatal(err)
	}
	var rule interceptor.LockRule
	if err := conf.LoadFromYamlBytes([]byte("Method: /zerolock.test.Payments/Pay\nMode: replay\n"), &rule); err != nil {
		t.Fatalf("a rule's Mode: replay: %v", err)
	}
}

func TestReplayRefusedAtStartUp(t *testing.T) {
	srv := redistest.Start(t)
	stores := []redislock.Store{srv.Client(t), srv.Client(t), srv.Client(t)}
	_, err := interceptor.UnaryServerInterceptorWithBackend(replayConf("field:order.id", "ctx:userId"), redislock.NewRedLockBackend(stores))
	if !errors.Is(err, interceptor.ErrBadConfig) || !strings.Contains(err.Error(), "replay") {
		t.Fatalf("replay on Redlock: %v, want ErrBadConfig naming replay", err)
	}

	for _, tc := range []struct {
		name string
		conf func(c *interceptor.LockConf)
		want string
	}{
		{"Fence", func(c *interceptor.LockConf) { c.Fence = true }, "Fence"},
		{"Fence, replay by rule", func(c *interceptor.LockConf) {
			c.Fence, c.Mode, c.Rules[0].Mode = true, interceptor.ModeInflight, interceptor.ModeReplay
		}, "Fence"},
		{"no such fingerprint field", func(c *interceptor.LockConf) { c.Rules[0].Fingerprint = []string{"field:amountt"} }, "amountt"},
		{"unknown fingerprint source", func(c *interceptor.LockConf) { c.Rules[0].Fingerprint = []string{"header:x"} }, "header"},
		{"upper-case fingerprint metadata", func(c *interceptor.LockConf) { c.Rules[0].Fingerprint = []string{"metadata:X-Id"} }, "lower case"},
		{"fingerprint of a list", func(c *interceptor.LockConf) { c.Rules[0].Fingerprint = []string{"field:order.items"} }, "index"},
		{"Fingerprint outside replay", func(c *interceptor.LockConf) {
			c.Mode, c.Rules[0].Fingerprint = interceptor.ModeInflight, []string{"field:amount"}
		}, "Fingerprint"},
		{"Retain outside replay", func(c *interceptor.LockConf) {
			c.Rules[0].Mode, c.Rules[0].Retain = interceptor.ModeWindow, time.Hour
		}, "Retain"},
		{"negative Retain", func(c *interceptor.LockConf) { c.Retain = -time.Second }, "Retain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := replayConf("field:order.id", "ctx:userId")
			tc.conf(&c)
			_, err := interceptor.UnaryServerInterceptorWithBackend(c, redislock.NewBackend(srv.Client(t), redislock.WithoutWakeups()))
			if !errors.Is(err, interceptor.ErrBadConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrBadConfig mentioning %q", err, tc.want)
			}
		})
	}

	c := replayConf("field:order.id", "ctx:userId")
	c.Renew = true
	if _, err := interceptor.UnaryServerInterceptorWithBackend(c, redislock.NewBackend(srv.Client(t), redislock.WithoutWakeups())); err != nil {
		t.Fatalf("Renew with replay: %v", err)
	}
}

// TestReplayUnreadableRecord plants values that are not this
// interceptor's records in a call's key: each is answered Internal, the
// method does not run and the value is left alone.
func TestReplayUnreadableRecord(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	impl := newLedger()
	c := replayConf("field:order.id", "ctx:userId")
	c.Prefix = "planted"
	client := serve(t, c, newStore(srv), impl, authenticate)
	ctx := context.Background()
	if _, _, err := pay(client, payment("U-1", 10)); err != nil {
		t.Fatal(err)
	}
	keys, err := admin.Keys(ctx, "planted:*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys %v, %v; want the call's one key", keys, err)
	}
	key := keys[0]
	_, stored, err := redislock.NewBackend(admin).NewLocker(key, zerolock.LockerOptions{Expiry: 500 * time.Millisecond}).(zerolock.Recorder).AcquireOrReadCtx(ctx)
	if err != nil || stored == nil {
		t.Fatalf("read the stored result: %v", err)
	}
	rec, err := replay.Decode(stored, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	fingerprint := rec.Fingerprint
	internal, _ := proto.Marshal(status.New(codes.Internal, "kept by an older bug").Proto())
	ok, _ := proto.Marshal(status.New(codes.OK, "").Proto())
	planted := func(payload []byte) []byte {
		return replay.Encode(replay.Record{Kind: interceptor.RecordKind, Fingerprint: fingerprint, Payload: payload})
	}
	for _, tc := range []struct {
		name  string
		value []byte
	}{
		{"not a record", []byte("garbage")},
		{"a later format", append([]byte{2}, stored[1:]...)},
		{"a REST record", replay.Encode(replay.Record{Kind: 'h', Fingerprint: fingerprint, Payload: rec.Payload})},
		{"truncated payload", planted(rec.Payload[:len(rec.Payload)-1])},
		{"unknown form", planted([]byte{9, 0})},
		{"unknown message type", planted(interceptor.StoredResponse("zerolock.test.Gone", nil))},
		{"another message type", planted(interceptor.StoredResponse("zerolock.test.PayRequest", nil))},
		{"not a message name", planted(interceptor.StoredResponse("zerolock test", nil))},
		{"response that does not unmarshal", planted(interceptor.StoredResponse("zerolock.test.PayReply", []byte{0x0a, 0x05}))},
		{"status that does not unmarshal", planted(interceptor.StoredStatus([]byte{0xff}))},
		{"Internal status", planted(interceptor.StoredStatus(internal))},
		{"OK status", planted(interceptor.StoredStatus(ok))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := admin.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
			plant := redislock.NewBackend(admin).NewLocker(key, zerolock.LockerOptions{Expiry: 500 * time.Millisecond})
			if ok, err := plant.AcquireCtx(ctx); !ok || err != nil {
				t.Fatalf("take the key to plant a record: %v, %v", ok, err)
			}
			if ok, err := plant.(zerolock.Recorder).RecordCtx(ctx, tc.value, time.Minute); !ok || err != nil {
				t.Fatalf("plant the record: %v, %v", ok, err)
			}
			before, err := admin.Get(ctx, key).Bytes()
			if err != nil {
				t.Fatal(err)
			}
			runs := impl.runs.Load()
			_, header, err := pay(client, payment("U-1", 10))
			// Not Internal: the caller did nothing wrong, and the record may be
			// a later build's during a rolling deploy.
			if status.Code(err) != codes.Aborted || !strings.Contains(status.Convert(err).Message(), "cannot be replayed") ||
				retryDelay(err) <= 0 {
				t.Fatalf("call over %s: %v, want Aborted saying the result cannot be replayed, with RetryInfo", tc.name, err)
			}
			if isReplayed(header) || impl.runs.Load() != runs {
				t.Fatalf("call over %s was replayed or ran", tc.name)
			}
			after, err := admin.Get(ctx, key).Bytes()
			if err != nil || !bytes.Equal(after, before) {
				t.Fatalf("the planted value changed: %v", err)
			}
		})
	}
}

// retryDelay is the RetryInfo delay of a status error, 0 without one.
func retryDelay(err error) time.Duration {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.RetryInfo); ok {
			return info.GetRetryDelay().AsDuration()
		}
	}
	return 0
}
