# make test: everything CI runs. The tests start their own redis-server
# processes on free loopback ports and stop them when they end; this file
# only makes sure the server binaries are installed.

GO ?= go
# Real-server tests fail, instead of skipping, when a server is missing.
export ZEROLOCK_REQUIRE_REDIS := 1

.PHONY: test deps vet unit

test: deps vet
	$(GO) test -race -timeout 9m ./...

deps:
	@./scripts/ensure-packages.sh redis-server:redis-server

vet:
	$(GO) vet ./...

# unit runs the tests without installing anything: real-server tests are
# skipped when redis-server is missing.
unit:
	ZEROLOCK_REQUIRE_REDIS= $(GO) test ./...
