// Package torture holds zerolock's reliability tests: mutual exclusion
// across processes, holders killed mid-lock, idempotent replay across REST
// processes killed mid-request, exactly-once payments from clients through
// a REST service to an RPC service with faulty hops and killed processes,
// rate counts exact across processes (one with a skewed clock) on a node
// and a Cluster, and hostile HTTP and gRPC input. make test runs a short version of each;
// make torture runs the long versions (ZEROLOCK_TORTURE=1) and writes
// docs/RELIABILITY.md. Every test talks only to servers it started on
// 127.0.0.1 and stops by itself.
package torture
