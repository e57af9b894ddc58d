package testproc

import (
	"os"
	"os/exec"
	"syscall"
)

// A Process is a server process started by Start.
type Process struct {
	proc   *os.Process
	exited chan struct{} // closed when proc has exited
}

// Start starts cmd so that it dies with the test binary, even when the
// binary itself is killed (SIGKILL as its parent-death signal), and
// watches for its exit. It returns cmd.Start's error.
func Start(cmd *exec.Cmd) (*Process, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{proc: cmd.Process, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Pid returns the process id.
func (p *Process) Pid() int {
	return p.proc.Pid
}

// Exited returns a channel closed once the process has exited.
func (p *Process) Exited() <-chan struct{} {
	return p.exited
}

// Kill stops the process with SIGKILL, as a crash would, and waits for it
// to exit. Killing an exited process does nothing.
func (p *Process) Kill() {
	_ = p.proc.Kill()
	<-p.exited
}

// Signal sends sig to the process (SIGSTOP to pause it as a hung host
// would, SIGCONT to resume it); an exited process ignores it.
func (p *Process) Signal(sig os.Signal) {
	_ = p.proc.Signal(sig)
}
