package interceptor

import "google.golang.org/protobuf/reflect/protoreflect"

// RecordKind is the Kind of the interceptor's records, for tests that
// plant records.
const RecordKind = recordKind

// StoredResponse is the payload the interceptor keeps for a response of
// type name with body, for tests that plant records.
func StoredResponse(name string, body []byte) []byte {
	return storedResult{form: formResponse, response: protoreflect.FullName(name), body: body}.encode()
}

// StoredStatus is the payload the interceptor keeps for an error whose
// google.rpc.Status marshals to body, for tests that plant records.
func StoredStatus(body []byte) []byte {
	return storedResult{form: formStatus, body: body}.encode()
}
