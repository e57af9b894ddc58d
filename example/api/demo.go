// Command api is a go-zero API service that shows zerolock's RedisLock in
// business logic, its middleware on the routes, and its client interceptor
// on the zrpc client that POST /checkout pays through. Run it from the
// repository root:
//
//	go run ./example/api                  # embedded miniredis
//	go run ./example/api -f etc/api.yaml  # the Redis that etc/api.yaml names
//
// With no payments endpoint in etc/api.yaml's PaymentsRpc, it runs
// example/rpc's Payments service in-process, as etc/rpc.yaml configures it.
package main

import (
	"flag"
	"fmt"

	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/rest"
	"github.com/zeromicro/go-zero/rest/httpx"

	"github.com/zerolock/zerolock/example/api/internal/config"
	"github.com/zerolock/zerolock/example/api/internal/errorx"
	"github.com/zerolock/zerolock/example/api/internal/handler"
	"github.com/zerolock/zerolock/example/api/internal/svc"
)

var configFile = flag.String("f", "etc/api.yaml", "the config file")

func main() {
	flag.Parse()

	var c config.Config
	conf.MustLoad(*configFile, &c, conf.UseEnv())

	server := rest.MustNewServer(c.RestConf)
	defer server.Stop()

	ctx := svc.NewServiceContext(c)
	defer ctx.Close()
	httpx.SetErrorHandlerCtx(errorx.Handler)
	handler.RegisterHandlers(server, ctx)
	ctx.Locks.MustCheckRoutes(server) // a rule whose route does not exist fails here

	fmt.Printf("Starting server at %s:%d...\n", c.Host, c.Port)
	server.Start()
}
