package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/etcdlock"
	"github.com/zerolock/zerolock/internal/testing/etcdtest"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/zktest"
	"github.com/zerolock/zerolock/redislock"
	"github.com/zerolock/zerolock/zklock"
)

// lockService is one backend under comparison and what the tests found
// about it (the columns the bench cannot measure in a minute).
type lockService struct {
	name       string
	backend    zerolock.Backend
	nodeDeath  string
	fencing    string
	pickWhen   string
	unmeasured string // why hand-off is not measured, when it is not
}

// backendRun holds one service's latencies over every round.
type backendRun struct {
	cycle, handoff []time.Duration
	errors         int
	firstErr       error
}

// The lock's expiry in the comparison: long enough that no hold expires.
const compareExpiry = 5 * time.Second

// runBackends starts a redis-server, five more for Redlock, an etcd and a
// ZooKeeper on loopback ports, measures each backend in turn over rounds,
// and writes BACKENDS.md to out (or prints it).
func runBackends(rounds, cycles, handoffs int, out string) error {
	dir, err := os.MkdirTemp("", "zerolock-backends-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	services, stop, err := startServices(dir)
	defer stop()
	if err != nil {
		return err
	}
	runs := make([]backendRun, len(services))
	for r := 0; r < rounds; r++ {
		for _, i := range rotation(len(services), r) {
			s, run := services[i], &runs[i]
			prefix := fmt.Sprintf("bench:backends:%d", r)
			cyc, err := measureCycles(s.backend, prefix, cycles)
			run.cycle = append(run.cycle, cyc...)
			run.note(err)
			var ho []time.Duration
			if s.unmeasured == "" {
				ho, err = measureHandoffs(s.backend, prefix, handoffs)
				run.handoff = append(run.handoff, ho...)
				run.note(err)
			}
			fmt.Fprintf(os.Stderr, "round %d  %-22s acquire+release p50 %v  hand-off p50 %v  errors %d\n",
				r+1, s.name, percentile(cyc, 50), percentile(ho, 50), run.errors)
		}
	}
	doc := backendsDoc(services, runs, rounds, cycles, handoffs)
	if out == "" {
		fmt.Print(doc)
		return nil
	}
	return os.WriteFile(filepath.Join(out, "BACKENDS.md"), []byte(doc), 0o644)
}

func (r *backendRun) note(err error) {
	if err != nil {
		r.errors++
		if r.firstErr == nil {
			r.firstErr = err
		}
	}
}

// startServices launches the servers and makes the four backends. stop
// stops whatever was started, even after an error.
func startServices(dir string) ([]lockService, func(), error) {
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	redisClient := func() (*redis.Client, error) {
		sub := filepath.Join(dir, fmt.Sprintf("redis-%d", len(stops)))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return nil, err
		}
		srv, err := redistest.Launch(sub)
		if err != nil {
			return nil, fmt.Errorf("start redis-server (apt-get install redis-server): %w", err)
		}
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 16})
		stops = append(stops, func() { _ = c.Close(); srv.Kill() })
		return c, nil
	}
	single, err := redisClient()
	if err != nil {
		return nil, stop, err
	}
	var masters []redislock.Store
	for i := 0; i < 5; i++ {
		c, err := redisClient()
		if err != nil {
			return nil, stop, err
		}
		masters = append(masters, c)
	}

	etcdPath, err := exec.LookPath("etcd")
	if err != nil {
		return nil, stop, fmt.Errorf("etcd (apt-get install etcd-server): %w", err)
	}
	etcdDir := filepath.Join(dir, "etcd")
	if err := os.MkdirAll(etcdDir, 0o755); err != nil {
		return nil, stop, err
	}
	esrv, err := etcdtest.Launch(etcdPath, etcdDir)
	if err != nil {
		return nil, stop, fmt.Errorf("start etcd: %w", err)
	}
	stops = append(stops, esrv.Kill)
	ecli, err := esrv.NewClient()
	if err != nil {
		return nil, stop, err
	}
	stops = append(stops, func() { _ = ecli.Close() })

	zsrv, err := zktest.Launch()
	if err != nil {
		return nil, stop, fmt.Errorf("start ZooKeeper: %w", err)
	}
	stops = append(stops, zsrv.Kill)
	zconn, err := connectZK(zsrv.Addr())
	if err != nil {
		return nil, stop, err
	}
	stops = append(stops, zconn.Close)

	return []lockService{
		{
			name:      "Redis, single node",
			backend:   redislock.NewBackend(single),
			nodeDeath: "locks unavailable (errors, never a false success) until it is back; restarted without persistence it has forgotten every lock (TestRedisStopped, torture TestRestartWithoutPersistence); with a replica and `WithReplicaAcks`, a lock survives failover (TestSentinelFailover)",
			fencing:   "`WithFencing`: a counter in the same hash slot, bumped by the acquire script",
			pickWhen:  "you have Redis already and want the lowest latency; anti-double-click and idempotency windows, where a rare lost lock after a crash costs a duplicate, not corruption",
		},
		{
			name:       "Redlock, 5 Redis masters",
			backend:    redislock.NewRedLockBackend(masters, redislock.WithNodeTimeout(50*time.Millisecond)),
			nodeDeath:  "works while 3 of 5 masters answer; with 3 down, ErrQuorum and no keys left behind (TestRedlockSurvivesMinorityLoss)",
			fencing:    "none (the masters share no counter)",
			pickWhen:   "no single Redis may be a point of failure and the masters are independent; it relies on bounded clock drift and pauses",
			unmeasured: "`RedLock` has no waiting acquire",
		},
		{
			name:      "etcd (1 member)",
			backend:   etcdlock.NewBackend(ecli),
			nodeDeath: "measured here on one member: a hung etcd makes a watched holder's context end with ErrRenewFailed before its lease can lapse, and a revoked lease or deleted key with ErrLockLost (TestWatchRenewFailedWhileEtcdHangs, TestLostLockSignalled); a Raft cluster keeps serving while a majority lives (by design, not tested here)",
			fencing:   "the lock key's create revision, from etcd's own total order",
			pickWhen:  "correctness matters more than latency (leader election, jobs that must not run twice); waiters queue in revision order",
		},
		{
			name:      "ZooKeeper (standalone)",
			backend:   zklock.NewBackend(zconn),
			nodeDeath: "measured here standalone: a holder cut off from the server gets ErrLockLost, and its node goes when the session expires, freeing the lock (TestConnectionLossSignalled, TestSessionExpirySignalled); an ensemble serves while a majority lives (by design, not tested here)",
			fencing:   "the queue node's sequence number",
			pickWhen:  "you run ZooKeeper already (Kafka, Hadoop); waiters queue and each watches only its predecessor, no herd",
		},
	}, stop, nil
}

// connectZK opens a session, with the client's logging off.
func connectZK(addr string) (*zk.Conn, error) {
	conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for conn.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			conn.Close()
			return nil, errors.New("no ZooKeeper session within 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return conn, nil
}

type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

// measureCycles times n try-lock acquire + release cycles, one after
// another, each on its own key.
func measureCycles(b zerolock.Backend, prefix string, n int) ([]time.Duration, error) {
	ctx := context.Background()
	var lat []time.Duration
	for i := 0; i < n; i++ {
		l := b.NewLocker(fmt.Sprintf("%s:cycle:%d", prefix, i), zerolock.LockerOptions{Expiry: compareExpiry})
		start := time.Now()
		ok, err := l.AcquireCtx(ctx)
		if err != nil || !ok {
			return lat, fmt.Errorf("acquire: %v, %w", ok, err)
		}
		if _, err := l.ReleaseCtx(ctx); err != nil {
			return lat, fmt.Errorf("release: %w", err)
		}
		lat = append(lat, time.Since(start))
	}
	return lat, nil
}

// handoffHold is how long the holder keeps the lock while the waiter
// queues: longer than etcd's 100 ms loop that syncs a watch started at a
// past revision (as the concurrency Mutex's waiter's is), which a shorter
// hold would measure instead of the wake-up (20 ms holds: etcd's p50 was
// 80 ms).
const handoffHold = 150 * time.Millisecond

// measureHandoffs times n hand-offs: a waiter blocks in AcquireWaitCtx
// while the holder holds for handoffHold; the latency is from the start of
// the holder's release to the waiter's return.
func measureHandoffs(b zerolock.Backend, prefix string, n int) ([]time.Duration, error) {
	ctx := context.Background()
	key := prefix + ":handoff"
	opts := zerolock.LockerOptions{Expiry: compareExpiry}
	holder := b.NewLocker(key, opts)
	if ok, err := holder.AcquireCtx(ctx); err != nil || !ok {
		return nil, fmt.Errorf("first acquire: %v, %w", ok, err)
	}
	var lat []time.Duration
	for i := 0; i < n; i++ {
		waiter, ok := b.NewLocker(key, opts).(zerolock.Waiter)
		if !ok {
			return nil, errors.New("backend cannot wait")
		}
		got := make(chan error, 1)
		returned := make(chan time.Time, 1)
		go func() {
			ok, err := waiter.AcquireWaitCtx(ctx, 10*time.Second)
			returned <- time.Now()
			if err == nil && !ok {
				err = errors.New("wait ended without the lock")
			}
			got <- err
		}()
		time.Sleep(handoffHold) // the hold, during which the waiter queues
		released := time.Now()
		if _, err := holder.ReleaseCtx(ctx); err != nil {
			return lat, fmt.Errorf("release: %w", err)
		}
		at := <-returned
		if err := <-got; err != nil {
			return lat, fmt.Errorf("waiter: %w", err)
		}
		lat = append(lat, at.Sub(released))
		holder = waiter
	}
	_, err := holder.ReleaseCtx(ctx)
	return lat, err
}

// percentile is the p-th percentile of d (0 when empty).
func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func backendsDoc(services []lockService, runs []backendRun, rounds, cycles, handoffs int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Lock backends compared\n\nWritten by `make bench-backends` (`cd bench && go run . -backends -out ../docs`) on %s:\n"+
		"%s/%s, %d CPUs (%s), %s. Every server ran on this machine on a loopback port, started by the\n"+
		"bench: redis-server %s, etcd %s (one member, 50 ms heartbeat), ZooKeeper %s (standalone). Each\n"+
		"backend ran in turn, the order rotating, over %d rounds; per round %d try-lock cycles (acquire +\n"+
		"release on a fresh key, one after another) and %d hand-offs (a waiter blocked in AcquireWaitCtx\n"+
		"while the holder holds 150 ms; latency from the start of the release to the waiter's return).\n"+
		"Loopback hides the network: across hosts every round trip adds its RTT, and Redlock, etcd and\n"+
		"ZooKeeper clusters add replication round trips that one node does not show.\n\n",
		time.Now().UTC().Format("2006-01-02"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel(), runtime.Version(),
		commandVersion("redis-server", "--version"), commandVersion("etcd", "--version"), zkVersion(),
		rounds, cycles, handoffs)
	b.WriteString("| backend | acquire + release p50 / p99 | hand-off p50 / p99 | errors |\n|---|---:|---:|---:|\n")
	for i, s := range services {
		r := runs[i]
		handoff := fmt.Sprintf("%v / %v", round(percentile(r.handoff, 50)), round(percentile(r.handoff, 99)))
		if s.unmeasured != "" {
			handoff = "– (" + s.unmeasured + ")"
		}
		errs := fmt.Sprint(r.errors)
		if r.firstErr != nil {
			errs += " (" + shorten(r.firstErr.Error()) + ")"
		}
		fmt.Fprintf(&b, "| %s | %v / %v | %s | %s |\n", s.name,
			round(percentile(r.cycle, 50)), round(percentile(r.cycle, 99)), handoff, errs)
	}
	b.WriteString("\n| backend | when a node dies | fencing | pick it when |\n|---|---|---|---|\n")
	for _, s := range services {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", s.name, s.nodeDeath, s.fencing, s.pickWhen)
	}
	b.WriteString(backendsNotes)
	return b.String()
}

const backendsNotes = `
## Reading the table

- **Latency.** A Redis lock is one round trip each way and no disk; Redlock sends to five masters
  in parallel and waits for three. etcd and ZooKeeper commit every change through their log
  (an fsync per write on one member), and the etcd lock also grants a lease per acquisition, so
  their cycles are several times longer. Hand-off on Redis is a pub/sub wake-up; on etcd and
  ZooKeeper the waiter's watch fires when the holder's key or node is deleted. etcd syncs a
  watch that starts at a past revision (the concurrency Mutex's waiter's does) in a loop every
  100 ms, so a waiter that queued less than 100 ms before the release can wait up to that long:
  with 20 ms holds etcd's hand-off p50 was 80 ms. The holds here are 150 ms.
- **Expiry.** All four expire a lock whose holder vanished: Redis and Redlock by PX, etcd by the
  lease (whole seconds, at least 1.5 election timeouts), ZooKeeper by the session timeout (and,
  for a live process, the lock's own timer: ephemeral nodes have no TTL).
- **Safety.** None of them can stop a paused holder from writing after its lock expired; pass the
  fencing token to storage that rejects stale ones. Redlock has none to pass.
- The interfaces are the same (` + "`zerolock.Backend`" + `), so the REST middleware and the gRPC
  interceptor run on each (` + "`middleware/backends_test.go`" + ` runs the middleware on all but Redlock).
`

func round(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// commandVersion is the first version number a command prints.
func commandVersion(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if v := versionRE.FindString(string(out)); err == nil && v != "" {
		return v
	}
	return "(unknown)"
}

var versionRE = regexp.MustCompile(`\d+\.\d+\.\d+`)

// zkVersion reads the Debian package's jar name.
func zkVersion() string {
	matches, _ := filepath.Glob("/usr/share/java/zookeeper-3*.jar")
	for _, m := range matches {
		if v := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), "zookeeper-"), ".jar"); !strings.ContainsAny(v, "abcdefghijklmnopqrstuvwxyz") {
			return v
		}
	}
	return "(unknown)"
}
