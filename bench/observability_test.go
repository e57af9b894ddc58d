package main

import (
	"context"
	"testing"

	zprom "github.com/zeromicro/go-zero/core/prometheus"

	"github.com/zerolock/zerolock/internal/testing/redistest"
)

// BenchmarkObservability is one goroutine's lock cycle (try, release) on
// go-redis against a real redis-server, each under a recording parent
// span, with observe's metrics and tracing off and on, and the same
// without a parent span (a lock outside any traced request: no span, only
// the metrics). Run it with -benchmem: the difference in allocs/op is what
// observability adds per cycle.
//
//	cd bench && go test -run '^$' -bench Observability -benchmem
func BenchmarkObservability(b *testing.B) {
	zprom.Enable() // as go-zero's DevServer does
	srv := redistest.Start(b)
	client := srv.Client(b)
	cl := clients{redis: client}
	for _, bc := range []struct {
		name   string
		on     bool
		traced bool // each cycle under a recording parent span
	}{
		{"off", false, true},
		{"on", true, true},
		{"off, no parent span", false, false},
		{"on, no parent span", true, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			setObservability(bc.on)
			b.Cleanup(func() { setObservability(true) })
			cy := newObsCycler(cl, "bench:observability:"+bc.name)
			if !bc.traced {
				cy = cy.(tracedCycler).inner
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if ok, err := cy.cycle(ctx); !ok || err != nil {
					b.Fatalf("cycle: acquired %v, %v", ok, err)
				}
			}
		})
	}
}
