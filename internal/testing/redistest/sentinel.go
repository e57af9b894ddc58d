package redistest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/testing/testproc"
)

// SentinelMaster is the name the sentinels monitor.
const SentinelMaster = "zerolock"

// A Sentinel deployment: one master, one replica and three sentinels on
// loopback ports, declaring the master down after 1 s.
type Sentinel struct {
	Master, Replica *Server
	Sentinels       []*Server
}

// StartSentinel starts the deployment and waits until the replica is in
// sync and the sentinels agree on the master; everything stops when the
// test ends.
func StartSentinel(tb testing.TB) *Sentinel {
	tb.Helper()
	d := &Sentinel{Master: Start(tb)}
	d.Replica = Start(tb, "--replicaof", "127.0.0.1", strconv.Itoa(d.Master.Port()))
	path := serverPath(tb)
	for i := 0; i < 3; i++ {
		dir := tb.TempDir()
		conf := filepath.Join(dir, "sentinel.conf")
		body := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 2\n"+
			"sentinel down-after-milliseconds %s 1000\n"+
			"sentinel failover-timeout %s 5000\n", SentinelMaster, d.Master.Port(), SentinelMaster, SentinelMaster)
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
		s := &Server{path: path, conf: conf, dir: dir, args: []string{"--sentinel"}}
		var err error
		for attempt := 0; attempt < 3; attempt++ {
			if s.port, err = testproc.FreePort(); err == nil {
				if err = s.start(); err == nil {
					break
				}
			}
		}
		if err != nil {
			tb.Fatalf("redistest: start sentinel: %v", err)
		}
		tb.Cleanup(s.Kill)
		d.Sentinels = append(d.Sentinels, s)
	}
	d.waitSynced(tb)
	return d
}

// Addrs returns the sentinels' addresses.
func (d *Sentinel) Addrs() []string {
	var addrs []string
	for _, s := range d.Sentinels {
		addrs = append(addrs, s.Addr())
	}
	return addrs
}

// Client returns a go-redis failover client, closed when the test ends.
func (d *Sentinel) Client(tb testing.TB) *redis.Client {
	tb.Helper()
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: SentinelMaster, SentinelAddrs: d.Addrs()})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// waitSynced waits until the replica's link is up and every sentinel knows
// the replica and its two peers, so that a failover can happen.
func (d *Sentinel) waitSynced(tb testing.TB) {
	tb.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ready := true
		r := redis.NewClient(&redis.Options{Addr: d.Replica.Addr()})
		info, err := r.Info(ctx, "replication").Result()
		r.Close()
		ready = err == nil && strings.Contains(info, "master_link_status:up")
		for _, s := range d.Sentinels {
			sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
			m, err := sc.Master(ctx, SentinelMaster).Result()
			sc.Close()
			if err != nil || m["num-slaves"] != "1" || m["num-other-sentinels"] != "2" {
				ready = false
			}
		}
		if ready {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	tb.Fatal("redistest: sentinel deployment never became ready")
}
