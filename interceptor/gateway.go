package interceptor

import (
	"net/http"
	"strings"
)

// GatewayHeaders returns a header processor for go-zero's gateway, to pass
// to gateway.WithHeaderProcessor, that forwards each of the named HTTP
// headers a request carries as the gRPC metadata of the same name in lower
// case, one entry per value: "Idempotency-Key" reaches the service as
// idempotency-key, where a rule's metadata:idempotency-key key reads it.
//
// On its own go-zero's gateway forwards only the headers named
// Grpc-Metadata-*, and renames them with a gateway- prefix
// (Grpc-Metadata-Idempotency-Key becomes gateway-idempotency-key): a plain
// Idempotency-Key or Authorization header never reaches the service, so a
// rule keyed on metadata:idempotency-key would refuse every call through
// the gateway with codes.InvalidArgument, and metadata:authorization, the
// caller key a replay rule needs, would be missing too.
//
//	server := gateway.MustNewServer(c, gateway.WithHeaderProcessor(
//		interceptor.GatewayHeaders("Idempotency-Key", "Authorization")))
func GatewayHeaders(names ...string) func(http.Header) []string {
	type header struct{ name, key string }
	headers := make([]header, len(names))
	for i, name := range names {
		headers[i] = header{name: http.CanonicalHeaderKey(name), key: strings.ToLower(name)}
	}
	return func(h http.Header) []string {
		var md []string
		for _, hd := range headers {
			for _, v := range h[hd.name] {
				md = append(md, hd.key+":"+v)
			}
		}
		return md
	}
}
