# Sluice — see README.md. Every target works on a fresh machine after .ci/run's
# install step (Go toolchain on PATH).

GO        ?= go
BIN       := bin/sluice
PKGS      := ./...
# make test runs the race detector and the costly invariant checks.
TESTFLAGS ?= -race -tags invariants -count=1 -timeout 12m
FUZZTIME  ?= 15s

.PHONY: all build test test-short bench bench-cluster bench-scale bench-writeback fuzz lint demo crash e2e soak clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./tools/sluice

# test also runs every benchmark once (-benchtime 1x, in the same test
# binaries, after the tests), so that a broken benchmark is noticed; the
# numbers mean nothing under -race (make bench measures).
test: lint
	$(GO) test $(TESTFLAGS) -bench . -benchtime 1x $(PKGS)

# test-short skips the long crash loops; for quick iteration only.
test-short:
	$(GO) test -short -count=1 $(PKGS)

# crash runs the crash-point tests in full under -race: TestCrashPoints and
# TestCrashPointsAfterRecovery (a second power cut on recovered crash
# images) with 1,100 crash points each; make test runs the latter with 330.
crash:
	SLUICE_CRASH_AFTER_RECOVERY=1 $(GO) test -race -tags invariants -count=1 -run 'TestCrashPoints' -v ./segment/

# e2e is make demo as a test: it builds bin/sluice, starts three node
# processes with the launcher, runs the demo (leader kill included) twice
# with the default session timeout and stops the cluster. make test runs a
# bounded form of the same test (one run, 3 s session timeout, ~30 s).
e2e:
	SLUICE_E2E=1 $(GO) test -count=1 -v -run TestLocalClusterDemo ./tools/demo/

# soak runs `sluice soak` (tools/soak) for SOAK_DURATION against a fresh
# cluster in SOAK_DIR: kills, pauses, network partitions and power cuts on
# a seeded schedule, then the checker; exit 0 only if every invariant held.
# SOAK_FLAGS passes more, e.g. SOAK_FLAGS="--seed 42 --replication-factor 1"
# or SOAK_FLAGS="--negative-control page-cache". make test runs a 75 s form
# (tools/soak TestSoakShort: fixed seed, every fault kind, ~100 s) and each
# negative control once (TestNegativeControls: 15-25 s each, must lose).
SOAK_DURATION ?= 10m
SOAK_DIR      ?= ./soak-cluster
SOAK_FLAGS    ?=
soak: build
	$(BIN) soak --duration $(SOAK_DURATION) --dir $(SOAK_DIR) $(SOAK_FLAGS)

# bench prints the segment engine next to its baselines (plain sequential
# file writes and reads of the same bytes, measured in the same run; for
# BenchmarkAppendCompressed, 1 KiB produces per codec with the leader's
# record validation against the same appends without it) as a ratio
# table, then the protocol's cost: node's BenchmarkProduce (the
# segment append, then one node with a kgo producer, acks=1, per record
# size; x-segment is their records/s ratio, p50/p99 the produce latency),
# the protocol layer alone (BenchmarkWireProduce), and what the record
# validation costs a producer (BenchmarkProduceValidation: kgo, 1 KiB
# text records per codec, to a node that validates and one that does
# not; x-baseline is their records/s ratio); the tables are kept in
# bin/bench.txt.
bench:
	@mkdir -p bin
	segment/benchtable.sh | tee bin/bench.txt
	$(GO) test -run '^$$' -bench '^BenchmarkProduce$$' -benchmem -count=3 -timeout 30m ./node/ 2>&1 | grep -v '^time=' | tee bin/bench-produce.txt
	segment/benchtable.sh $(CURDIR)/bin/bench-produce.txt | tee -a bin/bench.txt
	$(GO) test -run '^$$' -bench '^BenchmarkWireProduce$$' -benchmem -count=1 ./node/kafka/ | tee -a bin/bench.txt
	$(GO) test -run '^$$' -bench '^BenchmarkProduceValidation$$' -benchtime 100000x -count=3 ./node/ 2>&1 | grep -v '^time=' | tee -a bin/bench.txt

# bench-cluster is `sluice bench`: a 3-node local cluster of real processes
# (temp dir, Kafka ports 19192..), the quick matrix (BENCH_ARGS=--quick; set
# BENCH_ARGS= for all 144 cells) with NATS JetStream measured beside it
# (nats-server is go-installed into bin/ when absent). Prints per-cell
# producer-perf-test lines and one table; writes bin/bench-cluster/bench.{csv,json,png}.
BENCH_ARGS ?= --quick
BENCH_PEER ?= nats
bench-cluster: build
	bin/sluice bench $(BENCH_ARGS) --peer "$(BENCH_PEER)" --out bin/bench-cluster

# bench-scale measures what idle partitions cost (issue 21, target 3): a
# 3-node in-process cluster per count in SCALE_PARTITIONS ("0 1000 3000";
# every node hosts all of them, RF=3), no traffic; prints the CPU the nodes
# use (cores, median of SCALE_ROUNDS windows of SCALE_SECONDS), the replica
# clock's wakeups per second, and heap, RSS, goroutines and descriptors per
# replica; the per-1,000-replica CPU subtracts the N=0 cluster.
# SCALE_CPUPROFILE=PATH writes a CPU profile of the windows to PATH.N. Kept
# in bin/bench-scale.txt; not part of make test (node/bench_scale_test.go).
bench-scale:
	@mkdir -p bin
	SLUICE_BENCH_SCALE=1 $(GO) test -count=1 -timeout 30m -run '^TestBenchScale$$' ./node/ 2>&1 | grep -v '^time=' | tee bin/bench-scale.txt

# bench-writeback measures batched writeback (sluice.log.writeback.interval.bytes):
# one in-process node on the real disk, a paced producer, rounds with it off
# and on interleaved; prints produce latency (p50..max) and the durability
# window (log pages not yet written back, via cachestat; the fsync window)
# with on/off ratios, also kept in bin/bench-writeback.txt. As root it lowers
# vm.dirty_background_bytes/dirty_bytes for the run and restores them after
# (WB_KEEP_SYSCTLS=1 leaves them alone). Knobs: WB_SECONDS, WB_RATE_MIB,
# WB_RECORD_BYTES, WB_INTERVAL_BYTES, WB_ROUNDS, WB_BG_BYTES, WB_DIRTY_BYTES
# (node/bench_writeback_test.go). Linux only; not part of make test.
bench-writeback:
	@mkdir -p bin
	SLUICE_BENCH_WRITEBACK=1 $(GO) test -count=1 -timeout 30m -run '^TestBenchWriteback$$' -v ./node/

# fuzz runs every fuzz target for FUZZTIME each, from the seed corpus kept in
# each package's testdata/fuzz/; a failing input is written there too (commit
# it with the fix). make test replays the seeds as ordinary tests.
fuzz:
	@set -e; for pkg in $$($(GO) list -f '{{if .TestGoFiles}}{{.Dir}}{{end}}' $(PKGS)); do \
	  for t in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$pkg/*_test.go 2>/dev/null | sed 's/^func //'); do \
	    echo "== $$pkg $$t"; (cd $$pkg && $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) .); \
	  done; \
	done

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags invariants $(PKGS)
	$(GO) test -count=1 ./tools/lint/

# demo starts a 3-node local cluster of real processes (embedded defaults, no
# config to write), produces and consumes through it with a real Kafka client,
# and leaves it running. A rerun replaces the old cluster.
DEMO_DIR ?= ./sluice-cluster
demo: build
	bin/sluice cluster start --nodes 3 --dir $(DEMO_DIR)
	bin/sluice demo --dir $(DEMO_DIR)
	@echo
	@echo "The cluster keeps running. Try:"
	@echo "  bin/sluice topics describe          (reads ./sluice-cluster/cluster.json)"
	@echo "  bin/sluice cluster health"
	@echo "  bin/sluice cluster status --dir $(DEMO_DIR)"
	@echo "Stop it with: bin/sluice cluster stop --dir $(DEMO_DIR)"

clean:
	rm -rf bin
