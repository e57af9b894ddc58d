package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/zerolock/zerolock/example/market/market"
)

// config is the command line.
type config struct {
	addr       string
	mode       string
	grain      market.Granularity
	maxRetries int
	lockWait   time.Duration
	workload   market.Workload
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var (
		c     config
		grain string
		fs    = flag.NewFlagSet("market", flag.ContinueOnError)
		w     = &c.workload
	)
	fs.SetOutput(stderr)
	fs.StringVar(&c.addr, "addr", "", "host:port of the Redis to use; empty starts an embedded miniredis")
	fs.StringVar(&c.mode, "mode", "optimistic", "optimistic (WATCH/MULTI/EXEC) or pessimistic (zerolock lock)")
	fs.StringVar(&grain, "grain", "item", "item (watch or lock per item) or market (the whole market)")
	fs.IntVar(&w.Buyers, "buyers", 8, "buyer goroutines")
	fs.IntVar(&w.Sellers, "sellers", 2, "seller goroutines")
	fs.IntVar(&w.Items, "items", 100, "items on the market")
	fs.DurationVar(&w.Duration, "duration", 5*time.Second, "how long to trade")
	fs.IntVar(&c.maxRetries, "retries", market.DefaultMaxRetries, "optimistic: retries of an aborted transaction")
	fs.DurationVar(&c.lockWait, "wait", market.DefaultLockWait, "pessimistic: longest wait for a lock")
	prefix := fs.String("prefix", string(market.DefaultKeys), "key prefix; its keys are deleted first")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if c.mode != "optimistic" && c.mode != "pessimistic" {
		return c, fmt.Errorf("-mode %q: want optimistic or pessimistic", c.mode)
	}
	var err error
	if c.grain, err = market.ParseGranularity(grain); err != nil {
		return c, err
	}
	w.Keys = market.Keys(*prefix)
	return c, nil
}

// run is the command: 0 when every invariant held, 1 when one did not or
// the run failed, 2 for a bad command line.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parseFlags(args, stderr)
	if err != nil {
		if err != flag.ErrHelp {
			fmt.Fprintln(stderr, "market:", err)
		}
		return 2
	}
	client, desc, closeAll, err := connect(c.addr)
	if err != nil {
		fmt.Fprintln(stderr, "market:", err)
		return 1
	}
	defer closeAll()

	opts := []market.Option{market.WithGranularity(c.grain),
		market.WithMaxRetries(c.maxRetries), market.WithLockWait(c.lockWait)}
	var m market.Market = market.NewOptimistic(client, c.workload.Keys, opts...)
	if c.mode == "pessimistic" {
		m = market.NewPessimistic(client, c.workload.Keys, opts...)
	}
	if err := c.workload.Seed(ctx, client); err != nil {
		fmt.Fprintln(stderr, "market:", err)
		return 1
	}
	res, err := c.workload.Run(ctx, client, m)
	if err != nil {
		fmt.Fprintln(stderr, "market:", err)
		return 1
	}
	checks, err := c.workload.CheckInvariants(context.WithoutCancel(ctx), client, res.Ledger)
	if err != nil {
		fmt.Fprintln(stderr, "market:", err)
		return 1
	}
	writeReport(stdout, c, desc, res, checks)
	if !market.AllOK(checks) {
		return 1
	}
	return 0
}
