// Command rpc is a zrpc service that shows zerolock's interceptor: the same
// payment called twice while the first runs is answered Aborted. Run it
// from the repository root, then the client:
//
//	go run ./example/rpc          # embedded miniredis, listens on 127.0.0.1:8080
//	go run ./example/rpc/client   # sends one payment twice at once
package main

import (
	"flag"
	"fmt"

	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/zrpc"

	"github.com/zerolock/zerolock/example/rpc/internal/config"
	"github.com/zerolock/zerolock/example/rpc/internal/svc"
	"github.com/zerolock/zerolock/example/rpc/rpcserver"
)

var configFile = flag.String("f", "etc/rpc.yaml", "the config file")

func main() {
	flag.Parse()

	var c config.Config
	conf.MustLoad(*configFile, &c, conf.UseEnv())
	s, ctx := newServer(c)
	defer ctx.Close()
	defer s.Stop()

	fmt.Printf("Starting rpc server at %s...\n", c.ListenOn)
	s.Start()
}

// newServer builds the zrpc server, as rpcserver.New does.
func newServer(c config.Config) (*zrpc.RpcServer, *svc.ServiceContext) {
	return rpcserver.New(c)
}
