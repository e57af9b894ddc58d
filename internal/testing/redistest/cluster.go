package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/testing/testproc"
)

// A Cluster is a Redis Cluster of three masters with one replica each on
// loopback ports, with a 1 s node timeout so a replica takes over from a
// killed master within a few seconds.
type Cluster struct {
	Nodes []*Server
	dir   string
}

var shared struct {
	once    sync.Once
	cluster *Cluster
	err     error
}

// SharedCluster starts the test binary's cluster on first use (about 3 s)
// and returns it to every later caller; CloseSharedCluster, from TestMain,
// stops it. A test that kills a node must bring the cluster back to a
// usable state (another master for the slots) before it ends: the replica
// takes over by itself.
func SharedCluster(tb testing.TB) *Cluster {
	tb.Helper()
	path := serverPath(tb)
	cli := cliPath(tb)
	shared.once.Do(func() {
		shared.cluster, shared.err = startCluster(path, cli)
	})
	if shared.err != nil {
		tb.Fatalf("redistest: start cluster: %v", shared.err)
	}
	return shared.cluster
}

// CloseSharedCluster stops the shared cluster, if one was started.
func CloseSharedCluster() {
	if shared.cluster != nil {
		shared.cluster.Close()
	}
}

func startCluster(path, cli string) (*Cluster, error) {
	dir, err := os.MkdirTemp("", "zerolock-cluster-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir}
	var addrs []string
	for i := 0; i < 6; i++ {
		nodeDir := fmt.Sprintf("%s/node%d", dir, i)
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			c.Close()
			return nil, err
		}
		srv, err := launchOn(pickClusterPort, path, nodeDir,
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "1000", "--cluster-replica-validity-factor", "0")
		if err != nil {
			c.Close()
			return nil, err
		}
		c.Nodes = append(c.Nodes, srv)
		addrs = append(addrs, srv.Addr())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		c.Close()
		return nil, fmt.Errorf("redis-cli --cluster create: %v: %s", err, out)
	}
	if err := c.WaitHealthy(30 * time.Second); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Addrs returns the addresses of the nodes that are running.
func (c *Cluster) Addrs() []string {
	var addrs []string
	for _, n := range c.Nodes {
		if n.running() {
			addrs = append(addrs, n.Addr())
		}
	}
	return addrs
}

// Client returns a go-redis cluster client, closed when the test ends.
func (c *Cluster) Client(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	tb.Cleanup(func() { _ = cc.Close() })
	return cc
}

// MasterOf returns the node that currently serves key's slot.
func (c *Cluster) MasterOf(tb testing.TB, key string) *Server {
	tb.Helper()
	ctx := context.Background()
	cc := c.Client(tb)
	slot, err := cc.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		tb.Fatalf("redistest: CLUSTER KEYSLOT: %v", err)
	}
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		tb.Fatalf("redistest: CLUSTER SLOTS: %v", err)
	}
	for _, s := range slots {
		if int64(s.Start) <= slot && slot <= int64(s.End) && len(s.Nodes) > 0 {
			for _, n := range c.Nodes {
				if n.Addr() == s.Nodes[0].Addr {
					return n
				}
			}
		}
	}
	tb.Fatalf("redistest: no master serves the slot of %q", key)
	return nil
}

// WaitHealthy waits until every running node reports cluster_state:ok and
// all 16384 slots are served, or d passes.
func (c *Cluster) WaitHealthy(d time.Duration) error {
	deadline := time.Now().Add(d)
	var last error
	for time.Now().Before(deadline) {
		last = c.healthy()
		if last == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("cluster not healthy after %v: %w", d, last)
}

func (c *Cluster) healthy() error {
	for _, n := range c.Nodes {
		if !n.running() {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
		info, err := cl.ClusterInfo(context.Background()).Result()
		cl.Close()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
			return errors.New("node " + n.Addr() + " not ok")
		}
	}
	return nil
}

// Close kills every node and removes their files.
func (c *Cluster) Close() {
	for _, n := range c.Nodes {
		n.Kill()
	}
	_ = os.RemoveAll(c.dir)
}

func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil
}

// pickClusterPort finds a port whose cluster bus port (port + 10000) is
// free too.
func pickClusterPort() (int, error) {
	for i := 0; i < 100; i++ {
		p, err := testproc.FreePort()
		if err != nil {
			return 0, err
		}
		if p+10000 > 65535 {
			continue
		}
		if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000)); err == nil {
			l.Close()
			return p, nil
		}
	}
	return 0, errors.New("no port with a free cluster bus port")
}

func cliPath(tb testing.TB) string {
	tb.Helper()
	return binaryPath(tb, "redis-cli", "redis-tools")
}
