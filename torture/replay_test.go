package torture

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/middleware"
)

// The replay workload's shape.
const (
	replayProcesses = 3
	replayExpire    = 300 * time.Millisecond
	replayUsers     = 8
	replaySlowShare = 20 // one handler in 20 works 8 × Expire
	replaySlow      = 8 * replayExpire
	replayKeyLimit  = time.Minute // a key not answered 2xx by then fails the test
)

// TestReplayAcrossKilledProcesses (issue 26): 3 processes, each a go-zero
// rest.Server with the middleware in replay mode (Expire 300 ms, default
// renewal and MaxHold), one on a Wait rule and one without, serve a
// payment handler whose duration straddles Expire (0.3-3 × Expire, one in
// 20 at 8 ×). Workers send each new idempotency key 2-5 concurrent
// duplicates, to random processes, each retried until it gets a 2xx, then
// one late retry; meanwhile a process is SIGKILLed while handlers are
// inside it, and replaced. The handler marks its key in Redis while it
// runs. Pass: (1) no run ever found another live run's marker; (2) of a
// key's runs, every one but the last was in a process killed before the
// next began; (3) every 2xx of a key is byte-identical, names the key's
// last run, and at most one of them is not marked Idempotent-Replayed;
// (4) nothing but 2xx and 409 with Retry-After, and connection errors only
// from killed processes.
func TestReplayAcrossKilledProcesses(t *testing.T) {
	duration, workers, killEvery := 3*time.Second, 4, 1500*time.Millisecond
	if long() {
		duration, workers, killEvery = 2*time.Minute, 16, 4*time.Second
	}
	srv := redistest.Start(t)
	admin := srv.Client(t)
	w := &replayWorkload{
		t:      t,
		admin:  admin,
		prefix: "torture:" + t.Name(),
		env:    []string{"REDIS_ADDR=" + srv.Addr(), "EXPIRE=" + replayExpire.String()},
		client: &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		killed: map[string]time.Time{},
	}
	w.env = append(w.env, "PREFIX="+w.prefix)
	t.Cleanup(w.client.CloseIdleConnections)
	t.Cleanup(w.stopAll)
	for range replayProcesses {
		if err := w.startProcess(); err != nil {
			t.Fatal(err)
		}
	}

	start := time.Now()
	stop := start.Add(duration)
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(26, uint64(g)))
			for time.Now().Before(stop) {
				w.runKey(r, g)
			}
		}()
	}
	r := rand.New(rand.NewPCG(26, 26))
	for next := start.Add(killEvery / 2); next.Before(stop); next = next.Add(killEvery) {
		time.Sleep(time.Until(next))
		w.killOne(r)
	}
	wg.Wait()
	took := time.Since(start)
	w.stopAll()
	w.check()

	// A duplicate that waited is a first request on the Wait rule that was
	// answered with a replay although it was sent before the key's original
	// answer arrived: without Wait it would have been refused with 409.
	var replayed, original, waited, waitRefused int
	for _, k := range w.keys {
		for _, a := range k.answers {
			switch {
			case a.status == http.StatusConflict && k.wait:
				waitRefused++
			case a.status/100 != 2:
			case !a.replayed:
				original++
			case k.wait && a.try == 0 && a.sent.Before(k.originalAt):
				waited++
				replayed++
			default:
				replayed++
			}
		}
	}
	if waited == 0 {
		t.Errorf("no duplicate on the Wait rule got the first answer while it waited (%d refused): Wait never replayed", waitRefused)
	}
	record(t, fmt.Sprintf("%d rest.Server processes, replay mode, Expire %v with default renewal and MaxHold; handler 0.3-3 × Expire, 1 in %d at %v; "+
		"%d workers x 2-5 concurrent duplicates per key + 1 late retry, half the keys on a Wait: %v rule; a process SIGKILLed mid-run every %v, replaced",
		replayProcesses, replayExpire, replaySlowShare, replaySlow, workers, replayWait, killEvery),
		fmt.Sprintf("%d keys, %d requests in %v: %d runs (%d again after their process was killed, %d stale markers taken over), "+
			"%d kills with %d handlers inside, %d original 2xx, %d replays (%d to duplicates that waited for the first), "+
			"%d 409s (%d on the Wait rule), %d connection errors to killed processes, %d overlaps, %d holds lost",
			len(w.keys), w.requests.Load(), took.Round(100*time.Millisecond), w.runs, w.runs-len(w.keys), w.takenOver,
			len(w.killed), w.killedInside, original, replayed, waited,
			w.conflicts.Load(), waitRefused, w.connErrors.Load(), w.violations, w.holdsLost))
}

// replayWorkload is the parent's side of the replay torture: the child
// processes, the keys sent and every answer they got.
type replayWorkload struct {
	t      *testing.T
	admin  *redis.Client
	prefix string
	env    []string
	client *http.Client

	mu           sync.Mutex
	live         []*serverProcess
	killed       map[string]time.Time // process id: when the kill began
	killedInside int64                // handlers inside the processes when they were killed
	nextID       int
	keys         []*replayKey

	requests, conflicts, connErrors atomic.Int64

	// read from Redis by check
	runs, takenOver       int
	violations, holdsLost int64
}

// replayKey is one idempotency key and every answer its requests got.
type replayKey struct {
	user, idem string
	wait       bool
	body       string

	mu         sync.Mutex
	answers    []replayAnswer
	originalAt time.Time // when the 2xx not marked replayed arrived
}

// replayAnswer is one request's answer.
type replayAnswer struct {
	status   int
	body     string
	replayed bool
	try      int // 0 for a duplicate's first request
	sent     time.Time
}

// startProcess starts a child serving the payment routes and adds it to
// the live ones.
func (w *replayWorkload) startProcess() error {
	w.mu.Lock()
	w.nextID++
	id := fmt.Sprintf("p%d", w.nextID)
	w.mu.Unlock()
	p, err := startServerChild("replayserver", id, w.env)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.live = append(w.live, p)
	w.mu.Unlock()
	return nil
}

// killOne SIGKILLs a random live process with a handler inside (any, if
// none had one within 2 s), and starts its replacement. A replacement that
// does not start fails the test, which goes on with the processes left
// (workers still run: a Fatal here would end the test under them).
func (w *replayWorkload) killOne(r *rand.Rand) {
	ctx := context.Background()
	w.mu.Lock()
	order := r.Perm(len(w.live))
	w.mu.Unlock()
	if len(order) < 2 {
		return // replacements failed: keep the last process serving
	}
	victim := order[0]
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if i := w.withHandlerInside(ctx, order); i >= 0 {
			victim = i
			break
		}
	}
	w.mu.Lock()
	p := w.live[victim]
	w.live = append(w.live[:victim:victim], w.live[victim+1:]...)
	w.mu.Unlock()
	inside := w.prefix + ":inside:" + p.id
	// Dead first, then noted: a run that starts in the process between
	// the note and the death would otherwise pass as one of a killed
	// process, and take over a marker of a live run.
	p.kill()
	at := time.Now()
	if err := w.admin.SAdd(ctx, w.prefix+":killed", p.id).Err(); err != nil {
		w.t.Errorf("note the kill of %s: %v", p.id, err)
	}
	n, _ := w.admin.Get(ctx, inside).Int64()
	w.mu.Lock()
	w.killed[p.id] = at
	w.killedInside += n
	w.mu.Unlock()
	if err := w.startProcess(); err != nil {
		w.t.Errorf("replace %s: %v", p.id, err)
	}
}

// withHandlerInside returns the first of the live processes at indexes
// order that has a handler inside, or -1. Only killOne changes w.live.
func (w *replayWorkload) withHandlerInside(ctx context.Context, order []int) int {
	w.mu.Lock()
	keys := make([]string, len(order))
	for j, i := range order {
		keys[j] = w.prefix + ":inside:" + w.live[i].id
	}
	w.mu.Unlock()
	if j := firstCounting(ctx, w.admin, keys); j >= 0 {
		return order[j]
	}
	return -1
}

// stopAll ends every process still running: their stdin closes, and a
// kill follows for one that does not exit. Stopping after the workload is
// not a kill of the test.
func (w *replayWorkload) stopAll() {
	w.mu.Lock()
	live := w.live
	w.live = nil
	w.mu.Unlock()
	stopServers(live)
}

// pick returns a random live process.
func (w *replayWorkload) pick(r *rand.Rand) *serverProcess {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.live[r.IntN(len(w.live))]
}

// runKey sends a new key's 2-5 concurrent duplicates, each retried until
// a 2xx, then one late retry, and keeps the key for check.
func (w *replayWorkload) runKey(r *rand.Rand, worker int) {
	work := time.Duration(3+r.IntN(28)) * replayExpire / 10
	if r.IntN(replaySlowShare) == 0 {
		work = replaySlow
	}
	w.mu.Lock()
	k := &replayKey{
		user: fmt.Sprintf("u%d", r.IntN(replayUsers)),
		idem: fmt.Sprintf("k%d-%d", worker, len(w.keys)),
		wait: r.IntN(2) == 0,
		body: fmt.Sprintf(`{"amount":%d,"workMs":%d}`, 1+r.IntN(1000), work.Milliseconds()),
	}
	w.keys = append(w.keys, k)
	w.mu.Unlock()
	var wg sync.WaitGroup
	for range 2 + r.IntN(4) {
		seed := r.Uint64()
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.send(k, rand.New(rand.NewPCG(seed, 26)))
		}()
	}
	wg.Wait()
	w.send(k, r)
}

// send sends one of k's requests to random live processes until it gets a
// 2xx, retrying a 409 after 50-150 ms (a client's retry, sooner than the
// whole seconds of Retry-After) and a connection error at once.
func (w *replayWorkload) send(k *replayKey, r *rand.Rand) {
	path := replayPath
	if k.wait {
		path = replayWaitPath
	}
	give := time.Now().Add(replayKeyLimit)
	for try := 0; time.Now().Before(give); try++ {
		p := w.pick(r)
		req, err := http.NewRequest(http.MethodPost, "http://"+p.addr+path, strings.NewReader(k.body))
		if err != nil {
			w.t.Error(err)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+k.user)
		req.Header.Set("Idempotency-Key", k.idem)
		sent := time.Now()
		w.requests.Add(1)
		resp, err := w.client.Do(req)
		if err != nil {
			if !p.dead.Load() {
				w.t.Errorf("key %s: %s answered no response and was not killed: %v", k.idem, p.id, err)
				return
			}
			w.connErrors.Add(1)
			continue
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			if !p.dead.Load() {
				w.t.Errorf("key %s: reading %s's answer: %v", k.idem, p.id, err)
				return
			}
			w.connErrors.Add(1)
			continue
		}
		a := replayAnswer{status: resp.StatusCode, body: string(body), try: try, sent: sent,
			replayed: resp.Header.Get(middleware.ReplayedHeader) == "true"}
		k.mu.Lock()
		k.answers = append(k.answers, a)
		if a.status/100 == 2 && !a.replayed && k.originalAt.IsZero() {
			k.originalAt = time.Now()
		}
		k.mu.Unlock()
		switch {
		case a.status/100 == 2:
			return
		case a.status == http.StatusConflict:
			w.conflicts.Add(1)
			if resp.Header.Get("Retry-After") == "" {
				w.t.Errorf("key %s: a 409 without Retry-After from %s: %s", k.idem, p.id, body)
			}
			time.Sleep(time.Duration(50+r.IntN(100)) * time.Millisecond)
		default:
			w.t.Errorf("key %s: %s answered %d: %s", k.idem, p.id, a.status, body)
			return
		}
	}
	w.t.Errorf("key %s: no 2xx within %v", k.idem, replayKeyLimit)
}

// check reads the runs and counters the processes left in Redis and
// checks every key against them.
func (w *replayWorkload) check() {
	t, ctx := w.t, context.Background()
	counter := func(name string) int64 { return readCounter(t, w.admin, w.prefix+":"+name) }
	w.violations, w.holdsLost = counter("violations"), counter("holds-lost")
	w.takenOver = int(counter("taken-over"))
	if w.violations != 0 {
		t.Errorf("%d times a run found another live run of its key inside, or its marker taken", w.violations)
	}
	if w.holdsLost != 0 {
		t.Errorf("%d holds of live processes were reported lost while their handler ran", w.holdsLost)
	}
	failed := 0
	for _, k := range w.keys {
		runs, err := w.admin.LRange(ctx, w.prefix+":runs:Bearer "+k.user+":"+k.idem, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		w.runs += len(runs)
		if !w.checkKey(k, runs) {
			if failed++; failed == 10 {
				t.Errorf("the later keys are not checked: 10 failed")
				return
			}
		}
	}
}

// checkKey checks one key's runs ("<run> <start ns>", in order) and
// answers, and reports whether they pass (the first failure is reported).
func (w *replayWorkload) checkKey(k *replayKey, runs []string) bool {
	t := w.t
	if len(runs) == 0 {
		t.Errorf("key %s: never ran", k.idem)
		return false
	}
	for i := 0; i+1 < len(runs); i++ {
		run, _, _ := strings.Cut(runs[i], " ")
		_, next, _ := strings.Cut(runs[i+1], " ")
		process, _, _ := strings.Cut(run, "-")
		nextStart, _ := strconv.ParseInt(next, 10, 64)
		killedAt, killed := w.killed[process]
		switch {
		case !killed:
			t.Errorf("key %s: ran again after run %s, whose process was never killed (runs %v)", k.idem, run, runs)
			return false
		case !killedAt.Before(time.Unix(0, nextStart)):
			t.Errorf("key %s: ran again after run %s before its process was killed at %v (runs %v)",
				k.idem, run, killedAt.UnixNano(), runs)
			return false
		}
	}
	last, _, _ := strings.Cut(runs[len(runs)-1], " ")
	want := fmt.Sprintf(`{"paymentId":%q}`, last)
	originals := 0
	for _, a := range k.answers {
		if a.status/100 != 2 {
			continue
		}
		if a.status != http.StatusCreated || a.body != want {
			t.Errorf("key %s: a 2xx %d %s; want 201 %s, the last run's (runs %v)", k.idem, a.status, a.body, want, runs)
			return false
		}
		if !a.replayed {
			originals++
		}
	}
	if originals > 1 {
		t.Errorf("key %s: %d 2xx not marked %s: true", k.idem, originals, middleware.ReplayedHeader)
		return false
	}
	return true
}
