// Package faultproxy puts a test's client behind a faulty network: a TCP
// proxy on a free loopback port that forwards to a server and, on the
// test's command, delays what the client sends (SetLatency), resets every
// open connection while still accepting new ones (Reset), cuts the client
// off until healed (Cut, Heal), or moves it to another server, as a
// failover would (Retarget).
//
//	p := faultproxy.Start(t, srv.Addr())
//	client := connect(p.Addr())
//	p.Cut()  // the client loses the server, and cannot reconnect
//	p.Heal() // until now
//
// The proxy stops when the test ends.
package faultproxy
