package torture

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/testing/testproc"
)

// A serverProcess is a child of the test binary that serves on a loopback
// port of its own until its stdin closes or it is killed.
type serverProcess struct {
	id    string // its name in what it records
	addr  string // 127.0.0.1:port
	proc  *testproc.Process
	stdin io.Closer
	dead  atomic.Bool // set before it is killed or stopped
}

// startServerChild starts this test binary in role, with CHILD_ID=id,
// PORT and env, on a port never handed out before in this process (so
// that no pooled connection to a killed child's port reaches its
// replacement), and returns once the child printed "listening": a role
// prints that once the server answering on the port is its own, or
// "failed ..." and exits. It tries three ports. The child dies with the
// test binary.
func startServerChild(role, id string, env []string) (*serverProcess, error) {
	var last string
	for range 3 {
		port, err := testproc.FreePort()
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(append(os.Environ(), childEnv+"="+role, "CHILD_ID="+id,
			"PORT="+strconv.Itoa(port)), env...)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		proc, err := testproc.Start(cmd)
		if err != nil {
			return nil, err
		}
		out := bufio.NewScanner(stdout)
		out.Scan()
		if last = out.Text(); last == "listening" {
			return &serverProcess{id: id, addr: fmt.Sprintf("127.0.0.1:%d", port), proc: proc, stdin: stdin}, nil
		}
		proc.Kill()
	}
	return nil, fmt.Errorf("%s process %s did not start: %q", role, id, last)
}

// kill marks the process dead and SIGKILLs it, as a crash would; it
// returns once the process has exited.
func (p *serverProcess) kill() {
	p.dead.Store(true)
	p.proc.Kill()
}

// stop ends the process as a test that is over does, not as a kill of the
// test: its stdin closes, and a SIGKILL follows if it has not exited
// within 5 s.
func (p *serverProcess) stop() {
	p.dead.Store(true)
	_ = p.stdin.Close()
	select {
	case <-p.proc.Exited():
	case <-time.After(5 * time.Second):
		p.proc.Kill()
	}
}

// stopServers stops the processes all at once: under the race detector
// each takes a second to exit.
func stopServers(procs []*serverProcess) {
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.stop()
		}()
	}
	wg.Wait()
}

// firstCounting returns the index of the first of the Redis counters keys
// (a process's handlers inside, say) above 0, or -1, also when Redis
// cannot tell.
func firstCounting(ctx context.Context, client *redis.Client, keys []string) int {
	counts, err := client.MGet(ctx, keys...).Result()
	if err != nil {
		return -1
	}
	for j, c := range counts {
		if n, _ := strconv.Atoi(fmt.Sprint(c)); n > 0 {
			return j
		}
	}
	return -1
}

// childRestServer is the rest.Server of a child process: name on
// 127.0.0.1:port, quiet, with no shedding and no breaker (a 503 of
// go-zero's own would read as the middleware's or the handler's) and a
// timeout far past the slowest handler.
func childRestServer(name string, port int) (*rest.Server, error) {
	var c rest.RestConf
	if err := conf.FillDefault(&c); err != nil {
		return nil, err
	}
	c.Name, c.Host, c.Port = name, "127.0.0.1", port
	c.DevServer.Enabled = false
	c.CpuThreshold = 0
	c.Log.Level, c.Log.Stat = "severe", false
	c.Middlewares.Shedding, c.Middlewares.Breaker = false, false
	c.Timeout = (30 * time.Second).Milliseconds()
	server, err := rest.NewServer(c)
	if err != nil {
		return nil, err
	}
	logx.Disable()
	return server, nil
}

// readCounter reads the counter the child processes keep at key: 0 when
// none was kept, and a read that fails fails the test.
func readCounter(t *testing.T, admin *redis.Client, key string) int64 {
	t.Helper()
	n, err := admin.Get(context.Background(), key).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Errorf("read %s: %v", key, err)
	}
	return n
}
