// Package resttest runs a real go-zero rest.Server on a free loopback port
// for tests and sends it requests: what the REST middleware's tests and
// the tests of each lock backend behind it (etcdlock, zklock, torture) do
// alike.
//
//	g := resttest.NewGate()
//	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
//		[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: g.Handle}})
//	go func() { first <- resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"A-1"}`) }()
//	<-g.Inside // the first request holds the lock
//	if r := resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"A-1"}`); r.Status != http.StatusConflict {
//		t.Fatalf("duplicate: %d %s", r.Status, r.Body)
//	}
//	g.Release <- struct{}{}
//
// Every server stops when the test ends. The package holds no lock backend
// and no server process: each test package keeps its own.
package resttest
