#!/bin/sh
# node/shards.sh BIN N [flags...]: runs node's compiled test binary BIN
# (go test -c) in N processes at once, each with a share of its tests and
# benchmarks (round robin over -test.list, so that neighbours by name, the
# group clients or the ACL tests, land in different shards), from node/
# (testdata paths are relative), with the flags given (-test.timeout ...).
# Each shard gets SLUICE_TEST_SHARD=i/n, so that the ports its tests
# draw (freeAddr) never collide with another shard's.
# Prints each shard's output as it ends; exits 1 if any shard failed.
#
# make test uses it: node's tests mostly wait on clusters of real nodes
# (elections, session timeouts, client retries), so one process used a
# fraction of 2 cores for about 6 minutes while the other packages had
# long finished.
set -u
bin=$1
n=$2
shift 2
cd "$(dirname "$0")" || exit 1
tests=$("$bin" -test.list '^(Test|Fuzz|Example)') || exit 1
benches=$("$bin" -test.list '^Benchmark') || exit 1
share() { printf '%s\n' "$1" | awk -v i="$2" -v n="$n" 'NF && (NR-1)%n==i' | paste -sd'|' -; }
logs=$(mktemp -d)
i=0
while [ "$i" -lt "$n" ]; do
	run=$(share "$tests" "$i")
	bench=$(share "$benches" "$i")
	(
		SLUICE_TEST_SHARD="$i/$n" "$bin" -test.run "^(${run:-none})\$" -test.bench "^(${bench:-none})\$" -test.benchtime 1x "$@" >"$logs/$i" 2>&1
		rc=$?
		echo "=== node shard $i/$n: exit $rc"
		cat "$logs/$i"
		exit $rc
	) &
	eval "pid$i=$!"
	i=$((i + 1))
done
rc=0
i=0
while [ "$i" -lt "$n" ]; do
	eval "wait \$pid$i" || rc=1
	i=$((i + 1))
done
rm -rf "$logs"
if [ "$rc" -eq 0 ]; then echo "ok  	node ($n shards)"; else echo "FAIL	node ($n shards)"; fi
exit $rc
