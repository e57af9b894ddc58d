# make test: everything CI runs. The tests start their own redis-server
# processes (redis-server, etcd, ZooKeeper) on free loopback ports and stop
# them when they end; this file only makes sure the server binaries are
# installed.

GO ?= go
# Real-server tests fail, instead of skipping, when a server is missing.
export ZEROLOCK_REQUIRE_REDIS := 1

.PHONY: test deps vet unit bench bench-interleave bench-backends torture race-repeat

# EXTERNALTEST is a module of its own that runs locktest from outside
# zerolock's module, as a third party's backend does (a few seconds).
EXTERNALTEST := locktest/internal/externaltest

# GOCTLPLUGIN is the goctl plugin's module (goctl's dependencies stay out of
# the library's go.mod). Its tests build goctl at the pinned version and run
# the READMEs' goctl commands: on example/api/demo.api, checking
# etc/api.yaml's generated rules, and on a goctl api new project they wire
# and build as the READMEs say. Those files are outside the module, whose
# changes go test's cache does not see, hence -count=1 (about 15 s warm; a
# cold build cache adds the project's build of go-zero, over a minute).
GOCTLPLUGIN := goctl-zerolock

test: deps vet
	$(GO) test -race -timeout 9m ./...
	cd $(EXTERNALTEST) && $(GO) test -race ./...
	cd $(GOCTLPLUGIN) && $(GO) test -count=1 ./...

# Valkey 9 and Redis 8 come from Debian sid, unpacked into this cache by
# scripts/sid-servers.sh (from the mirror in the apt sources, signatures and
# checksums verified; nothing installed into /); the tests start them
# through the wrappers named below, as they start redis-server.
SID_SERVERS ?= $(CURDIR)/.cache/sid-servers
export ZEROLOCK_VALKEY_SERVER := $(SID_SERVERS)/bin/valkey-server
export ZEROLOCK_REDIS8_SERVER := $(SID_SERVERS)/bin/redis8-server

# The sid step needs curl, gpgv and xz; dpkg and the Debian archive keyring
# come with apt. A cached run takes a fraction of a second.
deps:
	@./scripts/ensure-packages.sh redis-server:redis-server redis-cli:redis-tools \
		etcd:etcd-server /usr/share/zookeeper/bin/zkServer.sh:zookeeper curl:curl \
		gpgv:gpgv xz:xz-utils
	@./scripts/sid-servers.sh $(SID_SERVERS) || { echo "make: the tests on Valkey 9 and Redis 8 need" \
		"scripts/sid-servers.sh to succeed (its message is above)" >&2; exit 1; }

vet:
	$(GO) vet ./...
	cd bench && $(GO) vet ./...
	cd $(EXTERNALTEST) && $(GO) vet ./...
	cd $(GOCTLPLUGIN) && $(GO) vet ./...

# bench compares zerolock with the raw floor, go-zero's RedisLock,
# bsm/redislock and redsync in one run on a redis-server it starts, and
# writes docs/BENCHMARKS.md and docs/benchmarks.svg (see bench/doc.go).
bench: deps
	cd bench && $(GO) run . -out ../docs

# bench-interleave measures the paired comparisons interleaved every
# 100 ms in one process, which resolves about 1 % (see bench/doc.go).
bench-interleave: deps
	cd bench && $(GO) run . -interleave 20s

# bench-backends measures the lock on Redis, Redlock, etcd and ZooKeeper
# (servers it starts on loopback ports) and writes docs/BACKENDS.md.
bench-backends: deps
	cd bench && $(GO) run . -backends -out ../docs

# unit runs the tests without installing anything: real-server tests are
# skipped when redis-server is missing.
unit:
	ZEROLOCK_REQUIRE_REDIS= $(GO) test ./...
	cd $(EXTERNALTEST) && $(GO) test ./...
	cd $(GOCTLPLUGIN) && $(GO) test -count=1 ./...

# torture runs the long versions of the reliability tests (>= 100k
# acquisitions across 3 processes, repeated holder kills, >= 10k hostile
# HTTP requests and gRPC calls, >= 50k operations each on the semaphore,
# the multi-key lock and the read-write lock, 2 minutes of replay-mode
# duplicates and retries against REST processes killed mid-request, 10k
# operations paid exactly once from clients through REST to RPC with
# faulty hops and both tiers' processes killed, 30 s of rate counts on one
# key from 3 processes with skewed clocks, node and Cluster) and writes
# docs/RELIABILITY.md. It takes about 15 minutes and stops by itself
# within 20.
torture: deps
	ZEROLOCK_TORTURE=1 ZEROLOCK_RELIABILITY_REPORT=$(CURDIR)/docs/RELIABILITY.md \
		$(GO) test -count=1 -timeout 20m -v ./torture

# race-repeat runs every test three times under the race detector (issue 8,
# hygiene): about three times make test's test time.
race-repeat: deps
	$(GO) test -race -count=3 -timeout 30m ./...
	cd $(EXTERNALTEST) && $(GO) test -race -count=3 ./...

# proto regenerates the committed gRPC code. It needs protoc (Debian's
# protobuf-compiler) and the two plugins at the versions below.
PROTOC_GEN_GO := google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.11
PROTOC_GEN_GO_GRPC := google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
.PHONY: proto
proto:
	GOBIN=$(CURDIR)/bin $(GO) install $(PROTOC_GEN_GO) $(PROTOC_GEN_GO_GRPC)
	PATH=$(CURDIR)/bin:$$PATH protoc --proto_path=internal/testing/testpb \
		--go_out=internal/testing/testpb --go_opt=paths=source_relative \
		--go-grpc_out=internal/testing/testpb --go-grpc_opt=paths=source_relative \
		internal/testing/testpb/testpb.proto
	PATH=$(CURDIR)/bin:$$PATH protoc --proto_path=example/rpc \
		--go_out=example/rpc/payments --go_opt=paths=source_relative \
		--go-grpc_out=example/rpc/payments --go-grpc_opt=paths=source_relative \
		example/rpc/payments.proto

# observability takes docs/observability.png: the Grafana dashboard's
# panels (docs/grafana/zerolock.json) drawn from Debian's prometheus
# scraping example/api under a minute of load, screenshotted by headless
# chromium (both installed when missing). About 90 s.
.PHONY: observability
observability:
	./scripts/observability-shot.sh
