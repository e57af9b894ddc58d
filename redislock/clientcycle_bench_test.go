package redislock_test

import (
	"context"
	"crypto/sha1"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
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
	benchRows(b, "bench:c:", []cycleRow{
		{"floor", floorCycle(ctx, client)},
		{"zerolock", newLockCycle(ctx, client)},
	})
}

// cycleRow is one implementation's cycle in a benchmark.
type cycleRow struct {
	name  string
	cycle func(key string) (bool, error)
}

// benchRows runs each row as a sub-benchmark (runCycles, keys under
// prefix), reporting allocations.
func benchRows(b *testing.B, prefix string, rows []cycleRow) {
	var next atomic.Int64
	for _, row := range rows {
		b.Run(row.name, func(b *testing.B) {
			b.ReportAllocs()
			runCycles(b, row.name, prefix, &next, row.cycle)
		})
	}
}

// goZeroAnswerHook answers as answerHook does, with go-zero's store's
// replies: the status OK to SET and to go-zero's own acquire script (an
// EVALSHA of one key and two arguments), 1 to other scripts, and a SCRIPT
// LOAD with the code's digest, so that the adapter runs scripts by EVALSHA
// as it does on a server.
type goZeroAnswerHook struct{ answerHook }

func (goZeroAnswerHook) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(_ context.Context, cmd redis.Cmder) error {
		if load, ok := cmd.(*redis.StringCmd); ok && cmd.Name() == "script" {
			load.SetVal(fmt.Sprintf("%x", sha1.Sum([]byte(fmt.Sprint(cmd.Args()[2])))))
			return nil
		}
		c, ok := cmd.(*redis.Cmd)
		if !ok {
			return nil
		}
		switch name := cmd.Name(); {
		case name == "set", (name == "evalsha" || name == "eval") && len(cmd.Args()) == 6:
			c.SetVal("OK")
		default:
			c.SetVal(int64(1))
		}
		return nil
	}
}

// BenchmarkGoZeroClientCycle is BenchmarkClientCycle on go-zero's store
// (its duration and breaker hooks run, a hook answers every command):
// the drop-in's cycle beside go-zero's own lock's.
func BenchmarkGoZeroClientCycle(b *testing.B) {
	store := zredis.New("127.0.0.1:3", zredis.WithHook(goZeroAnswerHook{}))
	ctx := context.Background()
	benchRows(b, "bench:g:", []cycleRow{
		{"go-zero", goZeroCycle(ctx, store)},
		{"drop-in", dropInCycle(ctx, store)},
	})
}
