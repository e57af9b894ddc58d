package interceptor_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// A configCase is a configuration that a mode's start-up check accepts
// (why is "") or refuses with ErrBadConfig saying why; redlock builds it
// on a Redlock backend rather than a Redis store's.
type configCase struct {
	name    string
	c       interceptor.LockConf
	redlock bool
	why     string
}

// oneRule is the configuration of r alone, then changed by change.
func oneRule(r interceptor.LockRule, change ...func(*interceptor.LockConf)) interceptor.LockConf {
	c := interceptor.LockConf{Rules: []interceptor.LockRule{r}}
	for _, f := range change {
		f(&c)
	}
	return c
}

// checkConfigCases builds each case on a new redis-server's store, or on
// a Redlock backend of it (never used: refused first), and checks its
// verdict. It returns that Redlock backend, for checks of the test's own.
func checkConfigCases(t *testing.T, cases []configCase) zerolock.Backend {
	t.Helper()
	client := redistest.Start(t).Client(t)
	redlock := redislock.NewRedLockBackend([]redislock.Store{client, client, client})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			backend := redislock.NewBackend(client, redislock.WithoutWakeups())
			if tc.redlock {
				backend = redlock
			}
			_, err := interceptor.UnaryServerInterceptorWithBackend(tc.c, backend)
			switch {
			case tc.why == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.why != "" && (!errors.Is(err, interceptor.ErrBadConfig) || !strings.Contains(err.Error(), tc.why)):
				t.Fatalf("got %v, want ErrBadConfig saying %q", err, tc.why)
			}
		})
	}
	return redlock
}
