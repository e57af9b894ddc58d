package middleware

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/zerolock/zerolock/internal/guard"
)

// The handler gets the client's writer itself unless the flow needs its
// answer: held in replay mode, its status noted under a window's lock. A
// request that FailOpen serves unlocked keeps the writer as it is, with
// its Hijacker and other interfaces.
func TestExchangeWriter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mode   string
		how    guard.Run
		direct bool
	}{
		{"window, unguarded", ModeWindow, guard.Unguarded, true},
		{"window, guarded", ModeWindow, guard.Guarded, false},
		{"inflight, guarded", ModeInflight, guard.Guarded, true},
		{"replay, held", ModeReplay, guard.Held, false},
		{"replay, unguarded", ModeReplay, guard.Unguarded, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ru, err := compileRule(withDefaults(LockConf{Mode: tc.mode}), compileOnly(),
				LockRule{Method: http.MethodPost, Path: "/orders", Keys: []string{"header:Authorization"}})
			if err != nil {
				t.Fatal(err)
			}
			w := httptest.NewRecorder()
			var got http.ResponseWriter
			x := &exchange{ru: ru, w: w, r: httptest.NewRequest(http.MethodPost, "/orders", nil),
				next: func(w http.ResponseWriter, _ *http.Request) { got = w }}
			x.Run(context.Background(), tc.how)
			if direct := got == http.ResponseWriter(w); direct != tc.direct {
				t.Fatalf("handler got %T; want the client's writer itself: %v", got, tc.direct)
			}
		})
	}
}
