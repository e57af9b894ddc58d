package interceptor_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/core/logx"

	"github.com/zerolock/zerolock/interceptor"
)

// TestClientConfRefused: a ClientConf that would key or retry nothing it
// names, or retry without bound, is refused at start-up with an error
// wrapping ErrBadConfig that names the entry and its fix.
func TestClientConfRefused(t *testing.T) {
	for _, tc := range []struct {
		name     string
		conf     interceptor.ClientConf
		mentions []string
	}{
		{"no leading slash", interceptor.ClientConf{Methods: []string{"zerolock.test.Payments/Pay"}},
			[]string{"Methods: zerolock.test.Payments/Pay", "/<proto package>.<Service>/<Method>"}},
		{"no method", interceptor.ClientConf{Methods: []string{"/zerolock.test.Payments"}},
			[]string{"Methods: /zerolock.test.Payments", "/<proto package>.<Service>/<Method>"}},
		{"a method the linked service lacks", interceptor.ClientConf{Methods: []string{"/zerolock.test.Payments/Payy"}},
			[]string{"has no method Payy", "/zerolock.test.Payments/Pay, /zerolock.test.Payments/Refund"}},
		{"a streaming method", interceptor.ClientConf{Methods: []string{"/grpc.health.v1.Health/Watch"}},
			[]string{"/grpc.health.v1.Health/Watch", "streaming", "remove it from Methods"}},
		{"negative MaxAttempts", interceptor.ClientConf{Methods: []string{payMethod}, MaxAttempts: -1},
			[]string{"MaxAttempts is -1", "1 or more"}},
		{"negative Backoff", interceptor.ClientConf{Backoff: -time.Second},
			[]string{"Backoff is -1s", "positive"}},
		{"negative AttemptTimeout", interceptor.ClientConf{AttemptTimeout: -time.Second},
			[]string{"AttemptTimeout is -1s", "positive"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := interceptor.UnaryClientInterceptor(tc.conf)
			wantBadConfig(t, err, tc.mentions...)
		})
	}
}

// TestClientConfDefaults: the zero fields of a ClientConf built in code
// take the conf-tag defaults, so the zero ClientConf is valid.
func TestClientConfDefaults(t *testing.T) {
	for _, c := range []interceptor.ClientConf{
		{},
		{Methods: []string{payMethod, "/zerolock.test.Payments/Refund"}},
		{Methods: []string{payMethod}, MaxAttempts: 1, Backoff: time.Millisecond, AttemptTimeout: time.Second},
	} {
		if _, err := interceptor.UnaryClientInterceptor(c); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// TestClientMethodOfUnlinkedService: a client may call a service whose
// generated code it does not link (a hand-written descriptor, a generic
// proxy), so such a method is accepted; it is logged once, at error
// level, with the linked methods of that name, in case it is a typo.
func TestClientMethodOfUnlinkedService(t *testing.T) {
	var buf bytes.Buffer
	logx.SetLevel(logx.ErrorLevel)
	logx.SetWriter(logx.NewWriter(&buf))
	t.Cleanup(logx.Disable)

	if _, err := interceptor.UnaryClientInterceptor(interceptor.ClientConf{Methods: []string{"/payments.Payments/Pay"}}); err != nil {
		t.Fatalf("a method of a service not linked: %v, want it accepted", err)
	}
	log := buf.String()
	if n := strings.Count(log, "/payments.Payments/Pay"); n != 1 ||
		!strings.Contains(log, "did you mean /zerolock.test.Payments/Pay?") {
		t.Fatalf("log %q: want one line naming the method and the linked one of that name", log)
	}
}
