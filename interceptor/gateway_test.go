package interceptor_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/gateway"
	"github.com/zeromicro/go-zero/rest"
	"github.com/zeromicro/go-zero/zrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/readmetest"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/internal/testing/testpb"
)

// readmeGatewayConf loads the rule of the README's "Behind go-zero's
// gateway" (which README-cn.md must show too: LoadYAMLSame), its method,
// which no service linked here declares, replaced with method.
func readmeGatewayConf(t *testing.T, method string) interceptor.LockConf {
	t.Helper()
	var c struct{ Lock interceptor.LockConf }
	readmetest.LoadYAMLSame(t, "..", "metadata:idempotency-key, metadata:authorization", &c)
	if len(c.Lock.Rules) != 1 || c.Lock.Rules[0].Mode != interceptor.ModeReplay {
		t.Fatalf("the README's rule behind the gateway: %+v, want one rule, in replay mode", c.Lock.Rules)
	}
	c.Lock.Rules[0].Method = method
	return c.Lock
}

// TestBehindGateway: under the README's rule, a client of go-zero's
// gateway sends the standard Idempotency-Key and Authorization headers,
// which the gateway forwards, through GatewayHeaders, as the metadata the
// rule reads: the same POST sent twice runs the method once and the retry
// gets the stored answer, marked replayed; a POST without the key is the
// interceptor's InvalidArgument, which the gateway answers 400. The gateway
// on its own forwards Grpc-Metadata-Idempotency-Key as
// gateway-idempotency-key, which the rule does not read.
func TestBehindGateway(t *testing.T) {
	srv := redistest.Start(t)
	impl := newPayments()
	var seen atomic.Pointer[metadata.MD]
	record := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		seen.Store(&md)
		return h(ctx, req)
	}
	lock := interceptor.MustUnaryServerInterceptor(readmeGatewayConf(t, payMethod), newStore(srv))
	base := serveGateway(t, serveAddr(t, lock, impl, nil, record),
		gateway.WithHeaderProcessor(interceptor.GatewayHeaders("Idempotency-Key", "Authorization")))

	const body = `{"order":{"id":"G-1"},"amount":5}`
	const replayed = "Grpc-Metadata-" + interceptor.ReplayedHeader
	first := gatewayPost(t, base+"/pay", body, "Idempotency-Key", "k-1", "Authorization", "Bearer alice")
	if first.status != http.StatusOK || !strings.Contains(first.body, `"paid"`) || first.header.Get(replayed) != "" {
		t.Fatalf("first POST: %d %s %v, want 200 paid, not replayed", first.status, first.body, first.header)
	}
	retry := gatewayPost(t, base+"/pay", body, "Idempotency-Key", "k-1", "Authorization", "Bearer alice")
	if retry.status != http.StatusOK || retry.body != first.body || retry.header.Get(replayed) != "true" {
		t.Fatalf("retry: %d %s %v, want the first answer (%s), replayed", retry.status, retry.body, retry.header, first.body)
	}
	if got := impl.entered.Load(); got != 1 {
		t.Fatalf("the method ran %d times, want 1", got)
	}

	missing := gatewayPost(t, base+"/pay", body, "Authorization", "Bearer alice")
	if missing.status != http.StatusBadRequest || !strings.Contains(missing.body, "idempotency-key") {
		t.Fatalf("without the key: %d %s, want 400 naming idempotency-key", missing.status, missing.body)
	}
	prefixed := gatewayPost(t, base+"/pay", body, "Grpc-Metadata-Idempotency-Key", "k-2", "Authorization", "Bearer alice")
	if prefixed.status != http.StatusBadRequest {
		t.Fatalf("with Grpc-Metadata-Idempotency-Key: %d %s, want 400", prefixed.status, prefixed.body)
	}
	md := *seen.Load()
	if got := md.Get("gateway-idempotency-key"); len(got) != 1 || got[0] != "k-2" || len(md.Get("idempotency-key")) != 0 {
		t.Fatalf("Grpc-Metadata-Idempotency-Key reached the service as %v, want gateway-idempotency-key only", md)
	}
	if got := impl.entered.Load(); got != 1 {
		t.Fatalf("the method ran %d times, want 1: calls without the key must not run", got)
	}
}

// serveGateway runs go-zero's gateway in front of the gRPC server at
// grpcAddr, with POST /pay mapped to Pay, until the test ends, and returns
// its base URL. The gateway reads the service from a descriptor set
// (ProtoSets), written from testpb's compiled descriptor: without ProtoSets
// it asks the server's reflection service over a stream that it never
// closes, whose zrpc tracing goroutines outlive the gateway.
//
// The gateway's own http.Server stops only at the process's shutdown, and
// proc.Shutdown, go-zero's hook for tests, would also unregister every
// go-zero metric of the process (the other tests count theirs). So Start
// builds the gateway's routes (its handlers, with the header processor and
// the gRPC call) and then fails to listen on port -1, and a resttest
// server, a go-zero rest server that the test stops, serves those routes.
func serveGateway(t *testing.T, grpcAddr string, opts ...gateway.Option) string {
	t.Helper()
	var c gateway.GatewayConf
	if err := conf.FillDefault(&c.RestConf); err != nil {
		t.Fatal(err)
	}
	c.Name, c.Host, c.Port = "zerolock-test-gateway", "127.0.0.1", -1
	c.DevServer.Enabled = false // its HTTP server is never stopped
	var up zrpc.RpcClientConf
	if err := conf.FillDefault(&up); err != nil {
		t.Fatal(err)
	}
	up.Endpoints, up.Timeout = []string{grpcAddr}, 10000
	c.Upstreams = []gateway.Upstream{{
		Name:      "payments",
		Grpc:      &up,
		ProtoSets: []string{writeProtoSet(t)},
		Mappings:  []gateway.RouteMapping{{Method: http.MethodPost, Path: "/pay", RpcPath: strings.TrimPrefix(payMethod, "/")}},
	}}

	server := gateway.MustNewServer(c, opts...)
	logx.Disable()         // rest.MustNewServer set the logs up again
	t.Cleanup(server.Stop) // closes its connection to the gRPC server
	listenFailed := make(chan any, 1)
	go func() {
		defer func() { listenFailed <- recover() }()
		server.Start() // logx.Must exits the process if the routes fail to build
	}()
	if r := <-listenFailed; r == nil {
		t.Fatal("the gateway listened on port -1")
	}
	routes := server.Routes()
	if len(routes) != 1 {
		t.Fatalf("the gateway built %d routes, want POST /pay", len(routes))
	}
	return resttest.Serve(t, func(*rest.Server) {}, routes)
}

// gatewayAnswer is one answer of the gateway, read whole.
type gatewayAnswer struct {
	status int
	header http.Header
	body   string
}

// gatewayPost sends a JSON POST with the headers given as name, value
// pairs.
func gatewayPost(t *testing.T, url, body string, headers ...string) gatewayAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return gatewayAnswer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// writeProtoSet writes testpb's descriptor as a descriptor set file, what
// protoc --descriptor_set_out writes, and returns its path.
func writeProtoSet(t *testing.T) string {
	t.Helper()
	set := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{
		protodesc.ToFileDescriptorProto(testpb.File_testpb_proto),
	}}
	b, err := proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "testpb.pb")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A gateway's processor forwards the named headers under their lowercased
// names, every value, whatever the case a client spelled them in; other
// headers, Grpc-Metadata-* included, are left to the gateway.
func ExampleGatewayHeaders() {
	forward := interceptor.GatewayHeaders("Idempotency-Key", "Authorization")
	h := http.Header{}
	h.Set("idempotency-key", "k-1")
	h.Add("Authorization", "Bearer alice")
	h.Set("Grpc-Metadata-Trace-Id", "t-1")
	h.Set("Cookie", "session=s")
	fmt.Println(forward(h))
	// Output: [idempotency-key:k-1 authorization:Bearer alice]
}
