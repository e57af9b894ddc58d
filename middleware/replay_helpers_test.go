package middleware_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
)

// payKeys key the payment tests' rules: the caller, a claim go-zero's JWT
// puts in the context, and the client's idempotency key.
var payKeys = []string{"claim:userId", "header:Idempotency-Key"}

// replayConf locks POST path in replay mode by keys, for 5 s.
func replayConf(path string, keys ...string) middleware.LockConf {
	return middleware.LockConf{Mode: middleware.ModeReplay, Expire: 5 * time.Second, Rules: []middleware.LockRule{{
		Method: http.MethodPost, Path: path, Keys: keys,
	}}}
}

// payments is a payment handler: each run makes a new payment id, so a
// replay is told from a second run by its body.
type payments struct {
	runs   atomic.Int32
	status atomic.Int32 // the status to answer; 0 for 201
}

// handle answers status (201 by default) with the headers a payment API
// sets, a session cookie among them, and a body naming the new payment
// and echoing the request body.
func (p *payments) handle(w http.ResponseWriter, r *http.Request) {
	n := p.runs.Add(1)
	body, _ := io.ReadAll(r.Body)
	status := int(p.status.Load())
	if status == 0 {
		status = http.StatusCreated
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Payment-Id", fmt.Sprintf("pay-%d", n))
	h.Set("Cache-Control", "no-store")
	h.Add("X-Multi", "a")
	h.Add("X-Multi", "b")
	h.Set("Set-Cookie", fmt.Sprintf("session=s%d; HttpOnly", n))
	w.WriteHeader(status)
	reply, _ := json.Marshal(map[string]any{"paymentId": fmt.Sprintf("pay-%d", n), "request": string(body)})
	_, _ = w.Write(reply)
}

// servePayments serves POST path (and path's variables) with p behind
// go-zero's JWT (jwtSecret) and a replay-mode middleware for c on store,
// and returns the base URL.
func servePayments(t *testing.T, c middleware.LockConf, store *zredis.Redis, path string, p *payments) string {
	t.Helper()
	m := mustMiddleware(t, c, store)
	return resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: path, Handler: p.handle}}, rest.WithJwt(jwtSecret))
}

// payer is the user the payment tests pay as unless they name another.
const payer = "alice"

// pay sends POST url with a JSON body as payer under an idempotency key.
func pay(t *testing.T, url, key, body string) resttest.Result {
	t.Helper()
	return payAs(t, url, payer, key, body)
}

// payAs sends POST url with a JSON body as user under an idempotency key.
func payAs(t *testing.T, url, user, key, body string) resttest.Result {
	t.Helper()
	return resttest.Do(t, http.MethodPost, url, body, payHeaders(t, user, key)...)
}

// payHeaders are the headers of a payment by user under an idempotency
// key, as name, value pairs: user's token for go-zero's JWT (jwtSecret)
// and Idempotency-Key.
func payHeaders(t *testing.T, user, key string) []string {
	t.Helper()
	return []string{"Authorization", "Bearer " + resttest.Token(t, jwtSecret, user), "Idempotency-Key", key}
}

// sameAnswer fails the test unless replayed is first replayed: the same
// status and body bytes, the same handler headers but Set-Cookie, which a
// replay never carries, and Idempotent-Replayed: true, which the first
// never carries.
func sameAnswer(t *testing.T, first, replayed resttest.Result) {
	t.Helper()
	if replayed.Status != first.Status || replayed.Body != first.Body {
		t.Fatalf("replay %d %q, want the first answer %d %q", replayed.Status, replayed.Body, first.Status, first.Body)
	}
	for _, name := range []string{"Content-Type", "X-Payment-Id", "Cache-Control", "X-Multi"} {
		if got, want := fmt.Sprint(replayed.Header.Values(name)), fmt.Sprint(first.Header.Values(name)); got != want {
			t.Fatalf("replayed %s = %s, want the first's %s", name, got, want)
		}
	}
	if c := replayed.Header.Values("Set-Cookie"); len(c) != 0 {
		t.Fatalf("replay carries Set-Cookie %q", c)
	}
	if got := replayed.Header.Get("Idempotent-Replayed"); got != "true" {
		t.Fatalf("replay's Idempotent-Replayed = %q, want true", got)
	}
	if got := first.Header.Get("Idempotent-Replayed"); got != "" {
		t.Fatalf("first answer's Idempotent-Replayed = %q, want none", got)
	}
}

// errorCode is the code of a JSON error body, or "".
func errorCode(r resttest.Result) string {
	var body struct{ Code string }
	_ = json.Unmarshal([]byte(r.Body), &body)
	return body.Code
}
