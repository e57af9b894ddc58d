package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	zprom "github.com/zeromicro/go-zero/core/prometheus"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zeromicro/go-zero/core/logx"

	rawfloor "github.com/zerolock/zerolock/internal/testing/floor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
)

func main() {
	addr := flag.String("addr", "", "a redis-server to use (default: start one on a loopback port)")
	rounds := flag.Int("rounds", 7, "interleaved rounds per scenario")
	duration := flag.Duration("duration", time.Second, "length of one contender's run in a round")
	out := flag.String("out", "", "a directory to write BENCHMARKS.md and benchmarks.svg (or BACKENDS.md) to")
	backends := flag.Bool("backends", false, "compare the lock backends (Redis, Redlock, etcd, ZooKeeper) instead, writing BACKENDS.md")
	pairsOnly := flag.Bool("pairs", false, "run only the paired comparisons (the drop-in against go-zero's RedisLock, zerolock on go-redis against the floor) and print their table")
	inter := flag.Duration("interleave", 0, "compare each pairing interleaved in one process, switching every 100 ms, for this long per order, in each 50-goroutine scenario (see interleave.go), and print the ratios")
	flag.StringVar(&only, "only", "", "run only the scenarios whose name contains this (case-insensitive), for a quick look at a few rows")
	flag.Parse()
	logx.Disable()
	var err error
	if *backends {
		err = runBackends(3, 200, 30, *out)
	} else {
		err = run(*addr, *rounds, *duration, *out, *pairsOnly, *inter)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(addr string, rounds int, d time.Duration, out string, pairsOnly bool, inter time.Duration) error {
	if addr == "" {
		dir, err := os.MkdirTemp("", "zerolock-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		srv, err := redistest.Launch(dir)
		if err != nil {
			return fmt.Errorf("start redis-server (apt-get install redis-server, or pass -addr): %w", err)
		}
		defer srv.Kill()
		addr = srv.Addr()
	}
	if !isLoopback(addr) {
		return fmt.Errorf("-addr %s is not a loopback address: the bench only loads servers on this machine", addr)
	}
	opts := &redis.Options{Addr: addr, PoolSize: 64}
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	cl := clients{
		redis: redis.NewClient(opts),
		gozero: zredis.MustNewRedis(zredis.RedisConf{Host: addr, Type: zredis.NodeType,
			NonBlock: true, DisableIdentity: true}),
	}
	defer cl.redis.Close()
	// The floor's EVALSHA needs its script cached, as any lock would load it.
	if err := rawfloor.Load(context.Background(), cl.redis); err != nil {
		return err
	}
	if err := loadRateScripts(cl); err != nil {
		return err
	}

	if inter > 0 {
		zprom.Enable() // as in every other comparison: go-zero's DevServer does in a service
		for _, sc := range scenarios {
			if sc.goroutines > 1 && selected(sc.name) {
				runInterleaved(cl, admin, sc, inter)
			}
		}
		return nil
	}
	if pairsOnly {
		zprom.Enable()
		rep := newReport(admin, rounds, d)
		for r := 0; r < rounds; r++ {
			runPairs(cl, admin, rep, r, d)
		}
		fmt.Print(rep.pairTable())
		return nil
	}
	hb, err := startHTTP(cl)
	if err != nil {
		return err
	}
	defer hb.stop()
	cb, err := startClients()
	if err != nil {
		return err
	}
	defer cb.stop()
	gb, err := startGRPC(cl, false)
	if err != nil {
		return err
	}
	defer gb.stop()
	gbNoRenew, err := startGRPC(cl, true)
	if err != nil {
		return err
	}
	defer gbNoRenew.stop()

	// As go-zero's DevServer does in a service (its default), so every
	// zerolock contender records its lock metrics, and the observability
	// scenarios differ only in observe's switches.
	zprom.Enable()
	rep := newReport(admin, rounds, d)
	var vb *valkeyBench
	if anySelected(valkeyScenarios) {
		if vb, err = startValkey(); err != nil {
			rep.valkey = "none, its rows skipped: " + err.Error()
			fmt.Fprintf(os.Stderr, "bench: no Valkey 9 server, the Valkey rows are skipped: %v\n", err)
		} else {
			defer vb.stop()
			rep.valkey = vb.version
		}
	}
	// Every contender's order turns by one each round, and every scenario
	// starts with an unrecorded warm-up, so no contender always runs first
	// into a cold connection pool.
	warm := d / 5
	for r := 0; r < rounds; r++ {
		servers := []struct {
			scenario, name string
			run            func(time.Duration) sample
		}{
			{httpScenario, "handler doing the floor", func(d time.Duration) sample { return hb.run("/floor/orders", r, d) }},
			{httpScenario, "zerolock middleware", func(d time.Duration) sample { return hb.run("/locked/orders", r, d) }},
			{httpScenario, "middleware, DisableRenew", func(d time.Duration) sample { return hb.run("/norenew/orders", r, d) }},
			// Its own order ids: the HTTP scenario's floor run of this round
			// may have left a cut-off request's key held.
			{replayScenario, "handler doing the floor", func(d time.Duration) sample { return hb.run("/floor/orders", 1000+r, d) }},
			{replayScenario, "zerolock replay", func(d time.Duration) sample { return hb.replay(r, d) }},
			{rateHTTPScenario, "handler doing go-zero PeriodLimit", func(d time.Duration) sample { return hb.run("/periodlimit/orders", r, d) }},
			{rateHTTPScenario, "zerolock rate rule", func(d time.Duration) sample { return hb.run("/rate/orders", r, d) }},
			{grpcScenario, "handler doing the floor", func(d time.Duration) sample { return gb.run(false, r, d) }},
			{grpcScenario, "zerolock interceptor", func(d time.Duration) sample { return gb.run(true, r, d) }},
			{grpcScenario, "interceptor, DisableRenew", func(d time.Duration) sample { return gbNoRenew.run(true, r, d) }},
		}
		picked := servers[:0]
		for _, s := range servers {
			if selected(s.scenario) {
				picked = append(picked, s)
			}
		}
		servers = picked
		// Warm-ups use their own order ids: a request cut off at their end
		// may leave its key held.
		if len(servers) > 0 {
			hb.run("/floor/orders", -1-r, warm)
			if err := hb.prime(r); err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
				os.Exit(1)
			}
			gb.run(false, -1-r, warm)
		}
		for _, i := range rotation(len(servers), r) {
			s := servers[i]
			smp := s.run(d)
			rep.add(s.scenario, s.name, smp)
			fmt.Fprintf(os.Stderr, "round %d  %-34s %-26s %9.0f req/s  %d errors\n", r+1, s.scenario, s.name, smp.ops, smp.errors)
		}
		runClients(cb, rep, r, d)
		for _, sc := range scenarios {
			if !selected(sc.name) {
				continue
			}
			runCycles(cl, admin, cycleContenders[0], sc, -1, warm)
			for _, i := range rotation(len(cycleContenders), r) {
				c := cycleContenders[i]
				s := runCycles(cl, admin, c, sc, r, d)
				rep.add(sc.name, c.name, s)
				fmt.Fprintf(os.Stderr, "round %d  %-34s %-26s %9.0f op/s  %5.1f µs/op in Redis  %d errors\n",
					r+1, sc.name, c.name, s.ops, s.usecOp, s.errors)
			}
		}
		runPairs(cl, admin, rep, r, d)
		if vb != nil {
			runValkey(vb, rep, r, d)
		}
		runObservability(cl, admin, rep, r, d)
		runPrimitives(cl, rep, r, d)
		runRates(cl, rep, r, d)
		runPrimitiveHandoffs(cl, rep, r, d)
		if selected(handoffScenario) {
			for _, i := range rotation(len(handoffContenders), r) {
				c := handoffContenders[i]
				key := fmt.Sprintf("bench:handoff:%d:%s", r, strings.ReplaceAll(c.name, " ", ""))
				rate, err := handoffs(cl.redis, c, key, 20, d)
				s := sample{ops: rate}
				if err != nil {
					s.errors, s.firstErr = 1, err
				}
				rep.add(handoffScenario, c.name, s)
				fmt.Fprintf(os.Stderr, "round %d  %-34s %-26s %9.0f hand-offs/s\n", r+1, handoffScenario, c.name, rate)
			}
		}
	}
	fmt.Print(rep.table())
	if out != "" {
		return rep.write(out)
	}
	return nil
}

// only is -only: when set, the scenarios whose name does not contain it
// are not run.
var only string

// selected says whether -only lets the scenario named name run.
func selected(name string) bool {
	return strings.Contains(strings.ToLower(name), strings.ToLower(only))
}

// anySelected says whether -only lets any of scs run.
func anySelected(scs []scenario) bool {
	for _, sc := range scs {
		if selected(sc.name) {
			return true
		}
	}
	return false
}

func isLoopback(addr string) bool {
	host := addr
	if i := strings.LastIndex(addr, ":"); i >= 0 {
		host = addr[:i]
	}
	return host == "localhost" || strings.HasPrefix(host, "127.") || host == "[::1]" || host == "::1"
}

// rotation is 0..n-1 started at round mod n.
func rotation(n, round int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = (i + round) % n
	}
	return order
}
