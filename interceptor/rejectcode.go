package interceptor

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
)

// DefaultRejectCode is the code of a refused duplicate when RejectCode is
// not set.
const DefaultRejectCode = codes.Aborted

// breakerCodes are the codes go-zero counts as a failure of the server
// (zrpc/internal/codes.Acceptable), in the zrpc client's breaker, the
// server's breaker and the p2c balancer alike. A refusal answered with one
// of them would let one caller's duplicates open the breaker for every
// caller of the service, so RejectCode refuses them, and OK, which would
// answer a call that did not run as a success.
var breakerCodes = map[codes.Code]bool{
	codes.DeadlineExceeded:  true,
	codes.Internal:          true,
	codes.Unavailable:       true,
	codes.DataLoss:          true,
	codes.Unimplemented:     true,
	codes.ResourceExhausted: true,
}

// codeNames are the codes by the names codes.Code.String() gives them.
var codeNames = func() map[string]codes.Code {
	names := make(map[string]codes.Code)
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		names[c.String()] = c
	}
	return names
}()

// validRejectCodes lists, for error messages, the codes RejectCode takes.
var validRejectCodes = func() string {
	var valid []string
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		if c != codes.OK && !breakerCodes[c] {
			valid = append(valid, c.String())
		}
	}
	return strings.Join(valid, ", ")
}()

// parseRejectCode reads a RejectCode: a code's name as codes.Code.String()
// spells it (FailedPrecondition) or as the gRPC spec does, in UPPER_SNAKE
// (FAILED_PRECONDITION); "" is DefaultRejectCode. It returns what is
// wrong, naming the codes it takes: an unknown name, OK, and the codes
// go-zero's breakers count as failures of the server.
func parseRejectCode(name string) (codes.Code, error) {
	if name == "" {
		return DefaultRejectCode, nil
	}
	c, ok := codeNames[name]
	if !ok {
		// UPPER_SNAKE, with gRPC's own spelling (CANCELLED).
		if err := c.UnmarshalJSON([]byte(strconv.Quote(name))); err != nil {
			return 0, fmt.Errorf("RejectCode %q is no gRPC code name: use one of %s (or its UPPER_SNAKE form, such as FAILED_PRECONDITION)",
				name, validRejectCodes)
		}
	}
	switch {
	case c == codes.OK:
		return 0, fmt.Errorf("RejectCode %s would answer a call that did not run as a success: use one of %s", name, validRejectCodes)
	case breakerCodes[c]:
		return 0, fmt.Errorf("RejectCode %s is a code go-zero's zrpc breakers and p2c balancer count as a failure of the server, "+
			"so one caller's duplicates would open the breaker for every caller: use one of %s "+
			"(Aborted, the default; FailedPrecondition for dtm)", name, validRejectCodes)
	}
	return c, nil
}
