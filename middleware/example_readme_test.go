package middleware_test

// The README's middleware snippets (the wiring under "Anti-double-click
// middleware" and the REST fragments of "From goctl") are lines of this
// file: the root package's TestReadmeGoBlocks fails when a README line is
// found in no compiled source it lists, this file among them.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/rest"
	"github.com/zeromicro/go-zero/rest/httpx"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/middleware"
	"github.com/zerolock/zerolock/redislock"
)

// goctl generates an internal/middleware package of its own, so a goctl
// service's servicecontext.go imports zerolock's under an alias, while its
// config.go and main, which do not import goctl's, use the plain name. This
// file stands for all three, so it imports the package under both names.
import zlmiddleware "github.com/zerolock/zerolock/middleware"

// Config is a goctl service's internal/config.Config with zerolock's
// middleware added.
type Config struct {
	rest.RestConf
	Auth struct {
		AccessSecret string
		AccessExpire int64
	}
	Redis redis.RedisConf     // DisableIdentity: true on redis-server before 7.2
	Lock  middleware.LockConf // github.com/zerolock/zerolock/middleware
}

// ServiceContext is a goctl service's internal/svc.ServiceContext. goctl
// generates its Lock field for `middleware: Lock` in the .api file; Locks
// keeps zerolock's middleware for main's route check.
type ServiceContext struct {
	Config Config
	Lock   rest.Middleware
	Locks  *zlmiddleware.LockMiddleware
}

// NewServiceContext fills the Lock field with zerolock's middleware.
func NewServiceContext(c Config) *ServiceContext {
	locks := zlmiddleware.MustNewLockMiddleware(c.Lock, redis.MustNewRedis(c.Redis))
	return &ServiceContext{Config: c, Lock: locks.Handle, Locks: locks}
}

// RegisterHandlers is what goctl generates in internal/handler/routes.go
// for a route group with `jwt: Auth` and `middleware: Lock`.
func RegisterHandlers(server *rest.Server, serverCtx *ServiceContext) {
	server.AddRoutes(
		rest.WithMiddlewares(
			[]rest.Middleware{serverCtx.Lock},
			[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: createOrder}}...,
		),
		rest.WithJwt(serverCtx.Config.Auth.AccessSecret),
	)
}

// createOrder stands for a goctl handler.
func createOrder(w http.ResponseWriter, r *http.Request) {
	httpx.OkJsonCtx(r.Context(), w, map[string]string{"status": "created"})
}

// apiYAML is a goctl service's etc/api.yaml, with the Redis at %s.
const apiYAML = `
Name: orders-api
Host: 127.0.0.1
Port: 8888
DevServer:
  Enabled: false
Auth:
  AccessSecret: an-example-secret-of-32-characters
  AccessExpire: 3600
Redis:
  Host: %s
  Type: node
  DisableIdentity: true   # miniredis rejects CLIENT SETINFO, as redis-server before 7.2 does
Lock:
  Expire: 5s
  Rules:
    - Method: POST
      Path: /orders
      Keys: [claim:userId, json:orderId]
`

// The four lines that wire the middleware into a go-zero server, and what
// the route check says of a rule whose Path has a typo.
func ExampleMustNewLockMiddleware() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	var c Config
	if err := conf.LoadFromYamlBytes([]byte(fmt.Sprintf(apiYAML, mr.Addr())), &c); err != nil {
		fmt.Println(err)
		return
	}
	server := rest.MustNewServer(c.RestConf) // not started: the example only builds it

	store := redis.MustNewRedis(c.Redis)
	lock := middleware.MustNewLockMiddleware(c.Lock, store) // bad rules fail here, at start-up
	server.Use(lock.Handle)                                 // or rest.WithMiddlewares, or a goctl ServiceContext field
	server.AddRoute(rest.Route{Method: http.MethodPost, Path: "/orders", Handler: createOrder},
		rest.WithJwt(c.Auth.AccessSecret))
	lock.MustCheckRoutes(server) // after the routes are added: a rule for no route fails

	typo := c.Lock
	typo.Rules = []middleware.LockRule{{Method: http.MethodPost, Path: "/order", Keys: []string{"claim:userId", "json:orderId"}}}
	fmt.Println(middleware.MustNewLockMiddleware(typo, store).CheckRoutes(server))
	// Output:
	// middleware: bad lock configuration: rule POST /order matches no route of the server (POST routes: /orders); fix its Method or Path, or set SkipRouteCheck: true on it if the route is added later
}

// A goctl service: the middleware fills the ServiceContext field that
// `middleware: Lock` in the .api file makes goctl generate, and main checks
// the rules against the routes after registering them.
func ExampleLockMiddleware_MustCheckRoutes() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	var c Config
	if err := conf.LoadFromYamlBytes([]byte(fmt.Sprintf(apiYAML, mr.Addr())), &c); err != nil {
		fmt.Println(err)
		return
	}
	server := rest.MustNewServer(c.RestConf) // not started: the example only builds it
	ctx := NewServiceContext(c)
	RegisterHandlers(server, ctx)
	ctx.Locks.MustCheckRoutes(server)

	for _, r := range server.Routes() {
		fmt.Println(r.Method, r.Path, "checked")
	}
	// Output:
	// POST /orders checked
}

// exportsYAML is the Lock section of a service whose exports are limited
// to two at once per user.
const exportsYAML = `
Lock:
  Rules:
    - Method: GET
      Path: /exports
      Keys: [claim:userId]
      Mode: limit
      Permits: 2
`

// Limit mode: each user runs at most two exports at once. A third export
// of the same user gets 429 with Retry-After while another user's export
// runs.
func ExampleLockMiddleware_limit() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	var c struct{ Lock middleware.LockConf }
	if err := conf.LoadFromYamlBytes([]byte(exportsYAML), &c); err != nil {
		fmt.Println(err)
		return
	}
	store := redis.MustNewRedis(redis.RedisConf{Host: mr.Addr(), Type: redis.NodeType, DisableIdentity: true})
	lock := middleware.MustNewLockMiddleware(c.Lock, store)
	limited, err := lock.ForRule(c.Lock.Rules[0]) // for rest.WithMiddlewares on the route
	if err != nil {
		fmt.Println(err)
		return
	}

	running, finish := make(chan struct{}), make(chan struct{})
	export := limited(func(w http.ResponseWriter, r *http.Request) {
		running <- struct{}{}
		<-finish // a long export
		httpx.OkJsonCtx(r.Context(), w, map[string]string{"status": "exported"})
	})
	get := func(user string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/exports", nil)
		// go-zero's JWT middleware puts each claim in the context so.
		r = r.WithContext(context.WithValue(r.Context(), "userId", user))
		w := httptest.NewRecorder()
		export(w, r)
		return w
	}
	served := make(chan int, 3)
	for i := 0; i < 2; i++ {
		go func() { served <- get("alice").Code }()
		<-running
	}
	w := get("alice") // a third export of alice's
	fmt.Println(w.Code, "Retry-After:", w.Header().Get("Retry-After"), w.Body.String())
	go func() { served <- get("bob").Code }()
	<-running
	close(finish)
	fmt.Println(<-served, <-served, <-served)
	// Output:
	// 429 Retry-After: 5 {"code":"limit_exceeded","message":"too many requests at once: at most 2 may run together, retry later"}
	// 200 200 200
}

// A service's own test on miniredis, as the README shows it: miniredis
// rejects CLIENT SETINFO, as redis-server before 7.2 does, so the store
// needs DisableIdentity: true, without which the middleware refuses it at
// start-up, naming the fix (a lock made by hand, redislock.NewRedisLock,
// works on either and logs the hazard once).
func TestReadmeServiceTestOnMiniredis(t *testing.T) {
	var c Config
	if err := conf.LoadFromYamlBytes([]byte(fmt.Sprintf(apiYAML, "unused:1")), &c); err != nil {
		t.Fatal(err)
	}

	mr := miniredis.RunT(t) // in the service's test
	store := redis.MustNewRedis(redis.RedisConf{Host: mr.Addr(), Type: redis.NodeType, DisableIdentity: true})
	lock := middleware.MustNewLockMiddleware(c.Lock, store) // without DisableIdentity: ErrIdentityRejected here

	order := lock.Handle(createOrder)
	for i, want := range []int{http.StatusOK, http.StatusOK} { // one after the other: no duplicate
		r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"orderId":"o-1"}`))
		r.Header.Set("Content-Type", "application/json")
		r = r.WithContext(context.WithValue(r.Context(), "userId", "alice")) // as go-zero's JWT middleware does
		w := httptest.NewRecorder()
		order(w, r)
		if w.Code != want {
			t.Fatalf("request %d: %d %s, want %d", i, w.Code, w.Body, want)
		}
	}

	// go-zero's default RedisConf, on a miniredis of its own: go-zero
	// keeps one client per address for the process, and this one sends
	// CLIENT SETINFO.
	other := redistest.Miniredis(t)
	_, err := middleware.NewLockMiddleware(c.Lock, redis.MustNewRedis(redis.RedisConf{Host: other.Addr(), Type: redis.NodeType}))
	if !errors.Is(err, redislock.ErrIdentityRejected) || !strings.Contains(err.Error(), "DisableIdentity: true") {
		t.Fatalf("NewLockMiddleware on go-zero's default RedisConf and miniredis = %v, want ErrIdentityRejected naming the fix", err)
	}
}
