// Package testproc holds what internal/redistest, internal/etcdtest and
// internal/zktest do alike with the server processes they run for tests:
// pick a free loopback port, start a process that dies with the test
// binary, kill or signal it, and read the end of its log when it fails to
// start.
//
//	port, err := testproc.FreePort()
//	...
//	p, err := testproc.Start(exec.Command(path, "--port", strconv.Itoa(port)))
//	...
//	if err := waitReady(addr, p.Exited()); err != nil {
//		p.Kill()
//		return fmt.Errorf("%w; log: %s", err, testproc.LogTail(logPath))
//	}
package testproc
