// Package keyspec turns a rule's key specs ("json:order.id", "header:X-Id",
// "field:order.id", ...) and the values a request carries for them into a
// bounded Redis lock key. It is written once for both the REST middleware
// and the gRPC interceptor, so the two hash alike and cannot drift apart.
//
// A key is namespace parts joined by ':' and a SHA-256 of the values in a
// length-prefixed, kind-tagged encoding: raw values never reach Redis, the
// key's length does not depend on the request, and two different tuples of
// values never share an encoding ("ab","c" and "a","bc" differ, and so do
// the string "1" and the number 1).
package keyspec
