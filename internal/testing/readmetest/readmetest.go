//go:build unix

package readmetest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Run runs script with bash in dir (the test's own directory when empty),
// with env added to the environment and proxies off (nothing may stand
// between a client and a server on loopback). The script runs in a process
// group of its own, which is killed when it has run for timeout, and once
// it has ended, so that no backgrounded command outlives it.
func Run(dir, script string, timeout time.Duration, env ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "NO_PROXY=*", "no_proxy=*"), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err = cmd.Start(); err != nil {
		return "", "", err
	}
	err = cmd.Wait()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v: %w", timeout, err)
	}
	return out.String(), errOut.String(), err
}
