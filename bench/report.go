package main

import (
	"context"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

const handoffScenario = "hand-off, 20 waiters, 1 ms holds"

// report gathers every round's samples and renders the medians.
type report struct {
	admin   *redis.Client
	rounds  int
	runTime time.Duration
	valkey  string                             // the Valkey scenarios' server, or why they were skipped
	order   []string                           // scenarios in order
	names   map[string][]string                // scenario -> contenders in order
	samples map[string]map[string][]sample     // scenario -> contender -> rounds
	pairs   map[string]map[[2]string][]pairRun // scenario -> pairing -> runPairs' pairs
}

// pairRun is one back-to-back run of a contender and its baseline.
type pairRun struct{ contender, baseline sample }

func (r *report) addPair(scenario string, pg [2]string, contender, baseline sample) {
	if r.pairs == nil {
		r.pairs = map[string]map[[2]string][]pairRun{}
	}
	if _, ok := r.pairs[scenario]; !ok {
		r.pairs[scenario] = map[[2]string][]pairRun{}
		if r.samples[scenario] == nil {
			r.order = append(r.order, scenario)
		}
	}
	r.pairs[scenario][pg] = append(r.pairs[scenario][pg], pairRun{contender, baseline})
}

func newReport(admin *redis.Client, rounds int, d time.Duration) *report {
	return &report{admin: admin, rounds: rounds, runTime: d, names: map[string][]string{},
		samples: map[string]map[string][]sample{}}
}

func (r *report) add(scenario, contender string, s sample) {
	if _, ok := r.samples[scenario]; !ok {
		r.samples[scenario] = map[string][]sample{}
		r.order = append(r.order, scenario)
	}
	if _, ok := r.samples[scenario][contender]; !ok {
		r.names[scenario] = append(r.names[scenario], contender)
		sort.SliceStable(r.names[scenario], func(i, j int) bool {
			return baseline(r.names[scenario][i]) && !baseline(r.names[scenario][j])
		})
	}
	r.samples[scenario][contender] = append(r.samples[scenario][contender], s)
}

// row is one contender's medians in one scenario.
type row struct {
	contender   string
	ops, usecOp float64
	ratio       float64 // to the floor, or to zerolock for hand-offs
	errors      int64
	firstErr    error
}

// baseline names the row the others are compared with: the floor,
// zerolock in the hand-off, or the client without the interceptor.
func baseline(name string) bool {
	return strings.HasPrefix(name, "floor") || strings.HasPrefix(name, "handler doing") || name == "zerolock" ||
		name == withoutClientInterceptor || name == periodLimitBaseline
}

// clientRows says whether sc is a client scenario, compared with the
// client without the interceptor rather than with a floor.
func clientRows(sc string) bool {
	return sc == clientScenario || sc == servedClientScenario
}

func (r *report) rows(scenario string) []row {
	names := r.names[scenario]
	base := r.samples[scenario][names[0]] // the floor; zerolock for hand-offs
	var rows []row
	for _, name := range names {
		var ops, usec, ratios []float64
		var errs int64
		var first error
		for i, s := range r.samples[scenario][name] {
			ops, usec = append(ops, s.ops), append(usec, s.usecOp)
			// The ratio is taken within a round, against the baseline run
			// moments apart, so the machine's drift between rounds cancels.
			if i < len(base) && base[i].ops > 0 {
				ratios = append(ratios, s.ops/base[i].ops)
			}
			errs += s.errors
			if first == nil {
				first = s.firstErr
			}
		}
		rows = append(rows, row{contender: name, ops: median(ops), usecOp: median(usec),
			ratio: median(ratios), errors: errs, firstErr: first})
	}
	return rows
}

func (r *report) table() string {
	var b strings.Builder
	for _, sc := range r.order {
		unit, vs := "op/s", "x floor"
		switch {
		case strings.HasPrefix(sc, "hand-off"):
			unit, vs = "hand-offs/s", "x zerolock"
		case sc == rateHTTPScenario:
			unit, vs = "req/s", "x PeriodLimit"
		case sc == httpScenario || sc == grpcScenario || sc == replayScenario:
			unit = "req/s"
		case sc == rateAdmitting || sc == rateRefusing:
			vs = "x PeriodLimit"
		case clientRows(sc):
			unit, vs = "calls/s", "x without"
		}
		fmt.Fprintf(&b, "\n### %s\n\n| contender | %s (median) | %s | Redis µs/op | errors |\n|---|---:|---:|---:|---:|\n", sc, unit, vs)
		for _, row := range r.rows(sc) {
			usec := fmt.Sprintf("%.2f", row.usecOp)
			if row.usecOp == 0 {
				usec = "–"
			}
			errs := fmt.Sprint(row.errors)
			if row.firstErr != nil {
				errs += " (" + shorten(row.firstErr.Error()) + ")"
			}
			fmt.Fprintf(&b, "| %s | %.0f | %.2f | %s | %s |\n", row.contender, row.ops, row.ratio, usec, errs)
		}
	}
	return b.String()
}

// pairTable reports runPairs' comparisons: for each scenario and pairing,
// the median of the pairs' ratios of rates, how many pairs the contender
// won, and each one's median Redis µs/op.
func (r *report) pairTable() string {
	var b strings.Builder
	for _, sc := range r.order {
		for _, pg := range pairings {
			runs := r.pairs[sc][pg]
			if len(runs) == 0 {
				continue
			}
			if b.Len() == 0 {
				b.WriteString("\n## Paired comparisons: the drop-in and the floor\n\n" +
					"Measured apart from the tables above, in pairs of runs back to back (half a round's length\n" +
					"each, the order alternating from pair to pair), so that each ratio compares runs moments apart:\n" +
					"zerolock's lock on go-zero's store against go-zero's own RedisLock on the same store, and\n" +
					"zerolock on go-redis against the raw floor. The ratio is the median of the pairs' ratios of\n" +
					"rates; Redis µs/op are medians.\n\n" +
					"| scenario | contender | baseline | x baseline | pairs won | Redis µs/op | baseline's |\n" +
					"|---|---|---|---:|---:|---:|---:|\n")
			}
			var ratios, usC, usB []float64
			won := 0
			for _, p := range runs {
				if p.baseline.ops > 0 {
					ratios = append(ratios, p.contender.ops/p.baseline.ops)
				}
				if p.contender.ops > p.baseline.ops {
					won++
				}
				usC = append(usC, p.contender.usecOp)
				usB = append(usB, p.baseline.usecOp)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %.2f | %d of %d | %.2f | %.2f |\n", sc, pg[0], pg[1],
				median(ratios), won, len(runs), median(usC), median(usB))
		}
	}
	return b.String()
}

// redisCPU breaks each lock-cycle scenario's Redis µs/op down by command
// (the median over rounds of each command's share), so the cost of a
// script against a plain command shows.
func (r *report) redisCPU() string {
	var b strings.Builder
	b.WriteString("\n## Where the Redis CPU goes\n\nRedis µs per operation by command, median over the rounds.\n")
	for _, sc := range r.order {
		if strings.HasPrefix(sc, "hand-off") || sc == httpScenario || sc == grpcScenario || sc == replayScenario || sc == rateHTTPScenario ||
			clientRows(sc) {
			continue
		}
		fmt.Fprintf(&b, "\n### %s\n\n| contender | by command |\n|---|---|\n", sc)
		for _, name := range r.names[sc] {
			perCmd := map[string][]float64{}
			for _, s := range r.samples[sc][name] {
				for cmd, usec := range s.usecCmd {
					perCmd[cmd] = append(perCmd[cmd], usec)
				}
			}
			cmds := make([]string, 0, len(perCmd))
			for cmd := range perCmd {
				cmds = append(cmds, cmd)
			}
			sort.Strings(cmds)
			parts := make([]string, 0, len(cmds))
			for _, cmd := range cmds {
				// A command absent from some rounds counts 0 there.
				xs := append(perCmd[cmd], make([]float64, len(r.samples[sc][name])-len(perCmd[cmd]))...)
				if m := median(xs); m >= 0.005 {
					parts = append(parts, fmt.Sprintf("%s %.2f", strings.ToUpper(cmd), m))
				}
			}
			fmt.Fprintf(&b, "| %s | %s |\n", name, strings.Join(parts, " + "))
		}
	}
	return b.String()
}

func shorten(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// write renders BENCHMARKS.md and benchmarks.svg into dir.
func (r *report) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := r.chart(filepath.Join(dir, "benchmarks.svg")); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmarks\n\nWritten by `make bench` (`bench/`) on %s. Every contender ran in one process against one\n"+
		"redis-server on a loopback port, in turn (the order rotating), over %d interleaved rounds of %v.\n"+
		"Rates are medians over the rounds; a ratio is the median of each round's ratio to the baseline\n"+
		"measured in that same round, so the machine's drift between rounds cancels. An operation is one\n"+
		"acquire try and, when it succeeded, the release. Since issue 30 every lock and primitive row makes a\n"+
		"new lock per operation with the default options (SetExpire(5); WithExpiry(5s) for the primitives),\n"+
		"as the middleware makes one per request and as ../shared/peerbench measures, so building the lock\n"+
		"is part of its cost; the floors mint nothing (the protocol alone). The observability and Valkey\n"+
		"rows keep one lock per goroutine. Redis µs/op is the server's command CPU\n"+
		"(INFO commandstats) per operation, summed over every command's line; the line of a script\n"+
		"(EVAL, EVALSHA) includes the commands it calls, which also count on their own lines, so\n"+
		"a GET or DEL run by a release script counts twice, for the floor as for the locks.\n"+
		"The semaphore, the multi-key lock and the read-write lock are measured against their own\n"+
		"floors (internal/testing/floor: one script or command to take, one to give back, with none of\n"+
		"zerolock's bookkeeping), and their woken hand-off against polling every 10 ms.\n"+
		"go-zero's Prometheus is enabled for the whole run, as a service's DevServer enables it, so every\n"+
		"zerolock row records its lock metrics (package observe, on by default). The observability\n"+
		"scenarios run the go-redis lock with observe's metrics and tracing switched off (the baseline)\n"+
		"and on, each cycle under a recording parent span of an OpenTelemetry SDK provider that samples\n"+
		"everything and exports nothing, started in both runs, so the ratio is the cost of zerolock's\n"+
		"metrics and its acquire span.\n"+
		"The Valkey 9 scenarios run on a Valkey server of their own (Debian sid's, started through the\n"+
		"wrapper of scripts/sid-servers.sh): a release WithoutWakeups there is one DELIFEQ, a native\n"+
		"compare-and-delete, against the same lock whose client logs in as an ACL user without DELIFEQ\n"+
		"and so releases with the script, on the same server in the same run.\n"+
		"The REST and gRPC server scenarios also run the same rule with DisableRenew: true, renewal off as\n"+
		"it was by default before issue 26, so the two rows give the cost of renewing every hold by default\n"+
		"(a timer per request, stopped when the handler returns within a third of Expire).\n"+
		"The gRPC client scenarios make the same zrpc call (zrpc's default client middlewares included)\n"+
		"through a client with the client interceptor and through one without, against one server whose\n"+
		"method answers at once without reading the key, so the ratio is the interceptor's whole cost on the\n"+
		"happy path (one attempt, a random key, one more header for both ends to encode and read) against the\n"+
		"cheapest call there is. In a served request, each call is made by the handler of a request the\n"+
		"server interceptor guards (in-process, on a backend whose locks hold nothing, the same in both\n"+
		"rows), so the key is derived from that request's with SHA-256.\n"+
		"The rate scenarios count requests against one rate (issue 29) with zerolock's sliding-log script (the\n"+
		"one behind Mode: rate) beside go-zero's PeriodLimit (a fixed window, the baseline) and TokenLimiter\n"+
		"(a token bucket whose script takes the client's clock), each asked for the same quota per second:\n"+
		"an operation is one request counted, and Redis µs/op is the script's CPU per request. go-zero's\n"+
		"limiters are each called once alone before the runs: their EVALSHA answered NOSCRIPT to 50 first\n"+
		"calls at once opens go-zero's circuit breaker for the store. The REST rate scenario serves the same\n"+
		"route under a rate rule and with a handler calling PeriodLimit on the same key, as go-zero's docs\n"+
		"teach; each request has its own order id, so every one is admitted.\n"+
		"Allocations per cycle are in\n"+
		"`go test -run '^$' -bench 'AcquireRelease|Primitive' -benchmem ./redislock`, and with observability\n"+
		"on against off in `cd bench && go test -run '^$' -bench Observability -benchmem`.\n\n", time.Now().UTC().Format("2006-01-02"), r.rounds, r.runTime)
	if only != "" {
		fmt.Fprintf(&b, "Only the scenarios whose name contains %q ran (-only).\n\n", only)
	}
	b.WriteString(keptSection(filepath.Join(dir, "BENCHMARKS.md")))
	b.WriteString(r.machine())
	b.WriteString("\n![ratio to the floor](benchmarks.svg)\n")
	b.WriteString(r.table())
	b.WriteString(r.pairTable())
	b.WriteString(r.redisCPU())
	return os.WriteFile(filepath.Join(dir, "BENCHMARKS.md"), []byte(b.String()), 0o644)
}

// The section of BENCHMARKS.md between these markers is written by hand
// (../shared/peerbench's runs, issue 30) and kept when make bench rewrites
// the rest.
const (
	keptBegin = "<!-- kept by make bench: begin -->"
	keptEnd   = "<!-- kept by make bench: end -->"
)

// keptSection is the kept section of the file at path, markers included
// and followed by a blank line, or "" when it has none.
func keptSection(path string) string {
	old, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	text := string(old)
	i, j := strings.Index(text, keptBegin), strings.Index(text, keptEnd)
	if i < 0 || j < i {
		return ""
	}
	return text[i:j+len(keptEnd)] + "\n\n"
}

func (r *report) machine() string {
	var b strings.Builder
	fmt.Fprintf(&b, "- machine: %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel())
	fmt.Fprintf(&b, "- Go: %s\n", runtime.Version())
	if info, err := r.admin.InfoMap(context.Background(), "server").Result(); err == nil {
		fmt.Fprintf(&b, "- Redis: %s\n", info["Server"]["redis_version"])
	}
	if r.valkey != "" {
		fmt.Fprintf(&b, "- Valkey: %s\n", r.valkey)
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			switch m.Path {
			case "github.com/zeromicro/go-zero", "github.com/redis/go-redis/v9", "github.com/bsm/redislock", "github.com/go-redsync/redsync/v4":
				fmt.Fprintf(&b, "- %s %s\n", m.Path, m.Version)
			}
		}
	}
	return b.String()
}

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if name, ok := strings.CutPrefix(line, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
		}
	}
	return "unknown CPU"
}

// chart draws each contender's ratio to the floor in each lock-cycle
// scenario as grouped bars.
func (r *report) chart(path string) error {
	p := plot.New()
	p.Title.Text = "Throughput relative to the raw floor (SET NX + EVALSHA)"
	p.Y.Label.Text = "x floor (median of rounds)"
	var scenarios []string
	for _, sc := range r.order {
		if _, cycles := r.samples[sc]["floor (SET NX + EVALSHA)"]; cycles {
			scenarios = append(scenarios, sc)
		}
	}
	if len(scenarios) == 0 { // -only left none
		return nil
	}
	names := r.names[scenarios[0]]
	w := vg.Points(14)
	for i, name := range names {
		var vals plotter.Values
		for _, sc := range scenarios {
			var ratio float64
			for _, row := range r.rows(sc) {
				if row.contender == name {
					ratio = row.ratio
				}
			}
			vals = append(vals, ratio)
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		bars.LineStyle.Width = 0
		bars.Color = plotutil.Color(i)
		if i == 1 {
			bars.Color = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
		}
		bars.Offset = w * vg.Length(i-len(names)/2)
		p.Add(bars)
		p.Legend.Add(name, bars)
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(60)
	p.Y.Min, p.Y.Max = 0, 1.6 // room for the legend above the bars
	p.NominalX(scenarios...)
	p.X.Min, p.X.Max = -0.7, float64(len(scenarios))-0.3
	return p.Save(11*vg.Inch, 5*vg.Inch, path)
}
