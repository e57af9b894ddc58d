// Package externaltest runs the conformance suite from a module other
// than zerolock's, as a third party's backend does: it proves that
// locktest can be imported from outside (no internal package in its
// way) and that doing so needs no module but zerolock's. It is a module
// of its own, so its test builds with its own go.mod and go.sum, as a
// user's would; make test and make vet run it.
package externaltest
