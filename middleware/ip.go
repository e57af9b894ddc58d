package middleware

import (
	"net/http"
	"strings"

	"github.com/zeromicro/go-zero/rest/httpx"

	"github.com/zerolock/zerolock/internal/keyspec"
)

// clientIP is the ip key's value: with no trusted proxy hops, what
// go-zero's httpx.GetRemoteAddr reports (the whole first X-Forwarded-For
// header when there is one, which the client writes); with hops, the
// address the outermost trusted proxy saw, which the client cannot forge
// as long as the service is reachable only through those proxies.
func clientIP(r *http.Request, hops int) string {
	if hops <= 0 {
		return keyspec.HostOnly(httpx.GetRemoteAddr(r))
	}
	// Each proxy appends the address it received from, to the last header
	// line or in a new one: read all of them, right to left.
	var hopsSeen []string
	for _, line := range r.Header.Values("X-Forwarded-For") {
		for _, addr := range strings.Split(line, ",") {
			if addr = strings.TrimSpace(addr); addr != "" {
				hopsSeen = append(hopsSeen, addr)
			}
		}
	}
	if len(hopsSeen) < hops {
		// Fewer hops than trusted proxies: the request did not come through
		// all of them, so the connection's peer is the client.
		return keyspec.HostOnly(r.RemoteAddr)
	}
	return keyspec.HostOnly(hopsSeen[len(hopsSeen)-hops])
}
