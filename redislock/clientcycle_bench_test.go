package redislock_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// answerHook answers every command itself, as a server would that took
// no time: SET NX with OK, a script with 1. Nothing is sent.
type answerHook struct{}

func (answerHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (answerHook) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(_ context.Context, cmd redis.Cmder) error {
		switch c := cmd.(type) {
		case interface{ SetVal(bool) }:
			c.SetVal(true)
		case interface{ SetVal(any) }:
			c.SetVal(int64(1))
		case interface{ SetVal(string) }:
			c.SetVal("OK")
		}
		return nil
	}
}

func (answerHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// BenchmarkClientCycle is the client's own work in a cycle (a new lock,
// acquire, release), with a go-redis client whose commands a hook answers
// at once: what zerolock spends beyond the floor on the client, without
// the network and the server, whose noise hides it in the benchmarks that
// have them. The floor mints a token per cycle, as any lock must.
func BenchmarkClientCycle(b *testing.B) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer client.Close()
	client.AddHook(answerHook{})
	ctx := context.Background()
	var next atomic.Int64
	rows := []struct {
		name  string
		cycle func(key string) (bool, error)
	}{
		{"floor", floorCycle(ctx, client)},
		{"zerolock", newLockCycle(ctx, client)},
	}
	for _, row := range rows {
		b.Run(row.name, func(b *testing.B) {
			b.ReportAllocs()
			runCycles(b, row.name, "bench:c:", &next, row.cycle)
		})
	}
}
