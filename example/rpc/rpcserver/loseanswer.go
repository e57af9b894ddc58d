package rpcserver

import (
	"context"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/interceptor"
)

// LoseAnswerMetadata is the demo switch that makes a service configured
// with LoseAnswers lose the first answer to a call with a given
// idempotency-key: a call that carries it, with any value, and the
// idempotency-key metadata runs as usual, then, the first time that key is
// seen, its answer is replaced by codes.Unavailable, as if the connection
// had dropped it. The client interceptor retries such a call with the same
// key, and the retry gets the stored answer replayed: one payment.
const LoseAnswerMetadata = "demo-lose-answer"

// answerLoser remembers the keys whose answer it lost, so that it loses
// one answer per key. A demo: the set only grows, and only by the calls
// that ask for it.
type answerLoser struct {
	mu   sync.Mutex
	lost map[string]bool
}

func newAnswerLoser() *answerLoser {
	return &answerLoser{lost: make(map[string]bool)}
}

func (a *answerLoser) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo,
	handler grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	key := strings.Join(md.Get(interceptor.IdempotencyKeyMetadata), ",")
	resp, err := handler(ctx, req)
	if len(md.Get(LoseAnswerMetadata)) == 0 || key == "" || !a.loseFirst(key) {
		return resp, err
	}
	return nil, status.Error(codes.Unavailable, "demo: the answer was lost on its way back")
}

// loseFirst reports whether key's answer is to be lost: the first time
// only.
func (a *answerLoser) loseFirst(key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lost[key] {
		return false
	}
	a.lost[key] = true
	return true
}
