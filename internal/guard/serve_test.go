package guard

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/replay"
)

// exchange is a transport that records what Serve asked of it.
type exchange struct {
	ran, held, delivered bool
	unguarded            bool
	runCtx               context.Context
	refused              *Refusal
	replayed             []byte

	handler  func(ctx context.Context) // nil: answers at once
	failed   bool                      // what Failed answers
	answer   Answer                    // what Answer answers
	replayOK bool                      // whether Replay can read the payload
}

func (x *exchange) Run(ctx context.Context, how Run) {
	x.ran, x.held, x.unguarded, x.runCtx = true, how == Held, how == Unguarded, ctx
	if x.handler != nil {
		x.handler(ctx)
	}
}

func (x *exchange) Failed(error) bool { return x.failed }

func (x *exchange) Answer(error) Answer { return x.answer }

func (x *exchange) Deliver() { x.delivered = true }

func (x *exchange) Refuse(r Refusal) { x.refused = &r }

func (x *exchange) Replay(payload []byte) error {
	if !x.replayOK {
		return errors.New("unreadable payload")
	}
	x.replayed = payload
	return nil
}

// records is an in-memory backend whose locks are Recorders and TTLers:
// a key holds a holder's token or a record, never expiring by itself.
type records struct {
	mu   sync.Mutex
	keys map[string]*entry
	ttl  time.Duration // what TTL reports while a key is held
}

type entry struct {
	holder *recordLock
	record []byte
}

func newRecords() *records {
	return &records{keys: make(map[string]*entry), ttl: 7 * time.Second}
}

func (b *records) NewLocker(key string, _ zerolock.LockerOptions) zerolock.Locker {
	return &recordLock{b: b, key: key}
}

func (b *records) state(key string) (held bool, record []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.keys[key]
	if e == nil {
		return false, nil
	}
	return e.holder != nil, e.record
}

type recordLock struct {
	b   *records
	key string
}

func (l *recordLock) AcquireCtx(ctx context.Context) (bool, error) {
	ok, _, err := l.AcquireOrReadCtx(ctx)
	return ok, err
}

func (l *recordLock) AcquireOrReadCtx(context.Context) (bool, []byte, error) {
	l.b.mu.Lock()
	defer l.b.mu.Unlock()
	switch e := l.b.keys[l.key]; {
	case e == nil:
		l.b.keys[l.key] = &entry{holder: l}
		return true, nil, nil
	case e.record != nil:
		return false, e.record, nil
	}
	return false, nil, nil
}

func (l *recordLock) ReleaseCtx(context.Context) (bool, error) {
	l.b.mu.Lock()
	defer l.b.mu.Unlock()
	if e := l.b.keys[l.key]; e != nil && e.holder == l {
		delete(l.b.keys, l.key)
		return true, nil
	}
	return false, nil
}

func (l *recordLock) RecordCtx(_ context.Context, record []byte, _ time.Duration) (bool, error) {
	l.b.mu.Lock()
	defer l.b.mu.Unlock()
	if e := l.b.keys[l.key]; e != nil && e.holder == l {
		l.b.keys[l.key] = &entry{record: record}
		return true, nil
	}
	return false, nil
}

func (l *recordLock) TTL(context.Context) (time.Duration, error) {
	if held, record := l.b.state(l.key); held || record != nil {
		return l.b.ttl, nil
	}
	return 0, nil
}

const testKind = 't'

func serveRule(t *testing.T, g *Guard, mode string) *Rule {
	t.Helper()
	ru, err := g.Compile("POST /pay", []string{"test"}, Settings{Expire: time.Second, Mode: mode, Permits: 1, Retain: time.Hour, DisableRenew: true},
		Settings{NamesCaller: true})
	if err != nil {
		t.Fatal(err)
	}
	return ru
}

// Serve answers the outcomes it cannot run with the transport's refusal,
// and runs the handler of the others.
func TestServeRefusals(t *testing.T) {
	ctx := context.Background()

	down := &Guard{Backend: failing{errStore}}
	x := &exchange{}
	down.Serve(ctx, serveRule(t, down, ModeInflight), "k", Fingerprint{}, x)
	if x.ran || x.refused == nil || x.refused.Reason != Unavailable {
		t.Fatalf("store down: ran %v, refused %+v; want Unavailable", x.ran, x.refused)
	}

	open := &Guard{Backend: failing{errStore}, FailOpen: true}
	x = &exchange{}
	open.Serve(ctx, serveRule(t, open, ModeInflight), "k", Fingerprint{}, x)
	if !x.ran || !x.unguarded || !x.delivered || x.refused != nil {
		t.Fatalf("fail open: ran %v, unguarded %v, delivered %v, refused %+v; want run unguarded and delivered", x.ran, x.unguarded, x.delivered, x.refused)
	}

	b := newRecords()
	g := &Guard{Backend: b}
	ru := serveRule(t, g, ModeInflight)
	first := &exchange{handler: func(context.Context) {
		dup := &exchange{}
		g.Serve(ctx, ru, "k", Fingerprint{}, dup)
		if dup.ran || dup.refused == nil || dup.refused.Reason != Duplicate || dup.refused.RetryAfter != b.ttl {
			t.Errorf("duplicate: ran %v, refused %+v; want Duplicate after %v", dup.ran, dup.refused, b.ttl)
		}
	}}
	g.Serve(ctx, ru, "k", Fingerprint{}, first)
	if held, _ := b.state("k"); !first.ran || held {
		t.Fatalf("inflight: ran %v, still held %v; want run and released", first.ran, held)
	}

	sems := newSemaphores(3 * time.Second)
	lg := &Guard{Backend: sems}
	lru := serveRule(t, lg, ModeLimit)
	lg.Serve(ctx, lru, "k", Fingerprint{}, &exchange{handler: func(context.Context) {
		over := &exchange{}
		lg.Serve(ctx, lru, "k", Fingerprint{}, over)
		if over.ran || over.refused == nil || over.refused.Reason != OverLimit || over.refused.RetryAfter != 3*time.Second {
			t.Errorf("over the limit: ran %v, refused %+v; want OverLimit after 3s", over.ran, over.refused)
		}
	}})
}

// Window mode keeps the lock after a handler that returned without
// failing, and frees it after a failure or a panic.
func TestServeWindow(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		x        *exchange
		panics   bool
		wantHeld bool
	}{
		{"completed", &exchange{}, false, true},
		{"failed", &exchange{failed: true}, false, false},
		{"panicked", &exchange{handler: func(context.Context) { panic("handler") }}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newRecords()
			g := &Guard{Backend: b}
			func() {
				defer func() {
					if r := recover(); (r != nil) != tc.panics {
						t.Fatalf("recovered %v; want a panic %v", r, tc.panics)
					}
				}()
				g.Serve(ctx, serveRule(t, g, ModeWindow), "k", Fingerprint{}, tc.x)
			}()
			if held, _ := b.state("k"); held != tc.wantHeld {
				t.Fatalf("held after the handler: %v, want %v", held, tc.wantHeld)
			}
		})
	}
}

// Replay mode stores a kept answer before delivering it, hands it to a
// retry of the same request, and refuses a reused key, an answer that was
// not kept, and a record it cannot read.
func TestServeReplay(t *testing.T) {
	ctx := context.Background()
	b := newRecords()
	g := &Guard{Backend: b, RecordKind: testKind, MaxRecord: 1 << 20}
	ru := serveRule(t, g, ModeReplay)
	fp := Fingerprint{1}

	var stored []byte
	first := &exchange{answer: Answer{Keep: true, Payload: []byte("paid")}, handler: func(context.Context) {
		if _, record := b.state("k"); record != nil {
			t.Error("stored before the handler returned")
		}
	}}
	g.Serve(ctx, ru, "k", fp, first)
	if _, stored = b.state("k"); !first.held || !first.delivered || stored == nil {
		t.Fatalf("first: held %v, delivered %v, stored %v; want all", first.held, first.delivered, stored != nil)
	}

	retry := &exchange{replayOK: true}
	g.Serve(ctx, ru, "k", fp, retry)
	if retry.ran || string(retry.replayed) != "paid" {
		t.Fatalf("retry: ran %v, replayed %q; want the stored %q", retry.ran, retry.replayed, "paid")
	}

	for _, tc := range []struct {
		name      string
		record    replay.Record
		fp        Fingerprint
		replayOK  bool
		want      Reason
		wantAfter time.Duration
	}{
		{"another request", replay.Record{Kind: testKind, Fingerprint: fp, Payload: []byte("x")}, Fingerprint{2}, true, KeyReused, 0},
		{"not kept", replay.Record{Kind: testKind, Fingerprint: fp, Unreplayable: true}, fp, true, NotKept, b.ttl},
		{"unreadable payload", replay.Record{Kind: testKind, Fingerprint: fp, Payload: []byte("x")}, fp, false, Unreadable, b.ttl},
		{"another transport's", replay.Record{Kind: 'z', Fingerprint: fp, Payload: []byte("x")}, fp, true, Unreadable, b.ttl},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b.mu.Lock()
			b.keys[tc.name] = &entry{record: replay.Encode(tc.record)}
			b.mu.Unlock()
			x := &exchange{replayOK: tc.replayOK}
			g.Serve(ctx, ru, tc.name, tc.fp, x)
			if x.ran || x.replayed != nil || x.refused == nil || x.refused.Reason != tc.want || x.refused.RetryAfter != tc.wantAfter {
				t.Fatalf("ran %v, replayed %q, refused %+v; want reason %v after %v", x.ran, x.replayed, x.refused, tc.want, tc.wantAfter)
			}
		})
	}

	// An answer not kept frees the key before it is delivered, so the
	// client's retry runs again; one that cannot be replayed is kept as
	// such, so its retries are refused.
	dropped := &exchange{answer: Answer{}}
	g.Serve(ctx, ru, "dropped", fp, dropped)
	if held, record := b.state("dropped"); held || record != nil || !dropped.delivered {
		t.Fatalf("answer not kept: held %v, record %v, delivered %v; want freed and delivered", held, record != nil, dropped.delivered)
	}
	big := &exchange{answer: Answer{Keep: true, Payload: []byte("ignored"), Unreplayable: "too large"}}
	g.Serve(ctx, ru, "big", fp, big)
	_, record := b.state("big")
	rec, err := replay.Decode(record, 1<<20)
	if err != nil || !rec.Unreplayable || len(rec.Payload) != 0 || !big.delivered {
		t.Fatalf("unreplayable answer: record %+v (%v), delivered %v; want an unreplayable record", rec, err, big.delivered)
	}
}

// The handler's context carries the request's key as it is under a replay
// rule, whose later requests with the key are retries of this one, and
// made the request's own under every other mode, whose later requests
// with the key are new work, also when the store is down and the request
// fails open.
func TestServeRequestKeyByMode(t *testing.T) {
	ctx := context.Background()
	served := func(g *Guard, mode string) string {
		t.Helper()
		x := &exchange{answer: Answer{Keep: false}}
		g.Serve(ctx, serveRule(t, g, mode), "k", Fingerprint{}, x)
		r, ok := RequestFrom(x.runCtx)
		if !x.ran || !ok {
			t.Fatalf("%s: ran %v, served request %v; want both", mode, x.ran, ok)
		}
		return r.Key
	}
	for _, mode := range []string{ModeInflight, ModeWindow, ModeReplay, ModeLimit} {
		newGuard := func() *Guard {
			if mode == ModeLimit {
				return &Guard{Backend: newSemaphores(time.Second)}
			}
			return &Guard{Backend: newRecords(), RecordKind: testKind, MaxRecord: 1 << 20}
		}
		one, two := served(newGuard(), mode), served(newGuard(), mode)
		if mode == ModeReplay {
			if one != "k" || two != "k" {
				t.Errorf("replay: keys %q, %q; want the lock key k each time", one, two)
			}
			continue
		}
		if one == two || one == "k" {
			t.Errorf("%s: keys %q, %q; want each request's own, not the lock key k", mode, one, two)
		}
	}
	// Failing open (only a plain lock backend here: the others' rules need
	// backends that failing is not).
	open := served(&Guard{Backend: failing{errStore}, FailOpen: true}, ModeInflight)
	if open == "k" {
		t.Errorf("failed open: key %q; want the request's own, not the lock key k", open)
	}
}
