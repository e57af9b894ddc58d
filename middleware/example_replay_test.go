package middleware_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/golang-jwt/jwt/v4"
	"github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/rest/handler"
	"github.com/zeromicro/go-zero/rest/httpx"

	"github.com/zerolock/zerolock/middleware"
)

// Replay mode: the retry of a completed payment gets the first answer,
// marked Idempotent-Replayed, without the handler running again; the same
// key sent with another amount is refused. The rule names the caller
// (claim:userId, which go-zero's JWT puts in the context), so a key is
// only ever replayed to the user who sent it first.
func ExampleLockMiddleware_replay() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	store := redis.MustNewRedis(redis.RedisConf{Host: mr.Addr(), Type: redis.NodeType, DisableIdentity: true})
	lock := middleware.MustNewLockMiddleware(middleware.LockConf{Mode: middleware.ModeReplay}, store)
	replay, err := lock.ForRule(middleware.LockRule{ // for rest.WithMiddlewares on the route
		Method: http.MethodPost, Path: "/payments", Keys: []string{"claim:userId", "header:Idempotency-Key"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	payments := 0
	const secret = "an-example-secret-of-32-characters"
	pay := handler.Authorize(secret)(replay(func(w http.ResponseWriter, r *http.Request) { // as rest.WithJwt(secret) wires it
		payments++
		httpx.OkJsonCtx(r.Context(), w, map[string]int{"paymentId": payments})
	}))
	token, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"userId": 42}).SignedString([]byte(secret))
	send := func(body string) {
		r := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+token)
		r.Header.Set("Idempotency-Key", "6d1f0c2a")
		w := httptest.NewRecorder()
		pay.ServeHTTP(w, r)
		fmt.Println(w.Code, w.Header().Get("Idempotent-Replayed"), w.Body.String())
	}
	send(`{"amount": 500}`)
	send(`{"amount": 500}`) // the response was lost: the client retries
	send(`{"amount": 600}`)
	fmt.Println("payments made:", payments)
	// Output:
	// 200  {"paymentId":1}
	// 200 true {"paymentId":1}
	// 422  {"code":"idempotency_key_reused","message":"the idempotency key was already used for a different request"}
	// payments made: 1
}
