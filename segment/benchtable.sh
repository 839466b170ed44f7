#!/bin/sh
# benchtable.sh prints the engine-versus-baseline table of the segment
# benchmarks: each benchmark's MB/s divided by the MB/s of the ".../baseline"
# benchmark of its group, measured in the same run, next to the target of
# issue 2 ("Speed"); BenchmarkAppendCompressed's baseline is the same append
# without record validation (issue 14). Each benchmark runs COUNT times
# (default 3) and the table keeps the best MB/s of each: other work on the
# machine only ever slows a run down, so the best run is the fairest
# estimate of both sides.
# With a file argument it reads saved `go test -bench` output instead:
#
#	segment/benchtable.sh                 # runs the benchmarks
#	COUNT=5 segment/benchtable.sh         # more runs on a busy machine
#	segment/benchtable.sh bench.txt       # or tables an earlier run
set -eu
cd "$(dirname "$0")"
if [ $# -gt 0 ]; then
	cat "$1"
else
	go test -run '^$' -bench . -benchmem -count="${COUNT:-3}" -timeout 30m .
fi | awk '
/^Benchmark/ {
	name = $1
	sub(/-[0-9]+$/, "", name)           # the GOMAXPROCS suffix
	mbs = ""; allocs = ""; per = "-"
	for (i = 2; i <= NF; i++) {
		if ($i == "MB/s") mbs = $(i-1)
		if ($i == "allocs/op") allocs = $(i-1)
		if ($i == "batches/fsync") per = $(i-1)
	}
	if (mbs == "") next
	group = name; sub(/\/[^\/]*$/, "", group)
	variant = name; sub(/^.*\//, "", variant)
	if (variant == "baseline") {
		if (base[group] == "" || mbs + 0 > base[group] + 0) base[group] = mbs
		next
	}
	if (!(name in idx)) { n++; idx[name] = n; g[n] = group; v[n] = variant; m[n] = mbs; f[n] = per }
	i = idx[name]
	if (mbs + 0 > m[i] + 0) { m[i] = mbs; f[i] = per }
	a[i] = allocs
}
function target(group, variant) {
	if (group ~ /^BenchmarkAppend/ && variant == "engine") return 0.80
	if (group ~ /^BenchmarkGroupCommit/ && variant ~ /^engine/) return 0.30
	if (group ~ /^BenchmarkRead/ && variant == "engine") return 0.70
	if (group ~ /^BenchmarkAppendCompressed/ && variant == "validated") return 0.80 # issue 14: leader record validation vs none
	if (group ~ /^BenchmarkProduce/ && variant == "kafka") return 0.50 # node: protocol vs segment append
	if (group == "BenchmarkClean/codec=none" && variant == "engine") return 0.50 # issue 16: cleaner vs read+write
	return 0
}
END {
	printf "%-26s %-30s %9s %9s %6s %6s %9s %13s\n", "group", "variant", "MB/s", "base MB/s", "ratio", "target", "allocs/op", "batches/fsync"
	for (i = 1; i <= n; i++) {
		b = base[g[i]]
		ratio = (b > 0) ? sprintf("%.2f", m[i] / b) : "-"
		t = target(g[i], v[i])
		ts = (t > 0) ? sprintf("%.2f", t) : "-"
		flag = ""
		if (t > 0 && b > 0 && m[i] / b < t) flag = "  below target"
		printf "%-26s %-30s %9s %9s %6s %6s %9s %13s%s\n", g[i], v[i], m[i], b, ratio, ts, a[i], f[i], flag
	}
}'
