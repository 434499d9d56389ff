#!/usr/bin/env bash
# What a change costs the measuring loop: interleaved runs of two builds, BEFORE and AFTER (any
# two jitterlab binaries, e.g. main's and a branch's), each `jitterlab run --interval 100us` on
# the same CPUs, compared by `jitterlab compare --json`. Prints per round and CPU the ratios
# AFTER / BEFORE of
#
#   - p50 and mean latency;
#   - CPU time per wakeup of the measuring thread (run.json cpu_time: each thread reads its
#     CLOCK_THREAD_CPUTIME_ID as its last act, over its wakeups), the loop's own cost;
#
# and their mean and median over every round and CPU, then over the undisturbed rounds (other
# processes used at most 5 % of the CPUs during both runs, common.sh's others_pct). With
# LOOP=noise it measures the noise loop instead (`jitterlab noise`, default policy and clock)
# and compares its cost per iteration (run.json threads[].noise.iteration_ns: the time outside
# gaps over the clock reads) in the same way. The order
# alternates by round (BEFORE first in odd rounds), so that a drift of the machine favours
# neither. Informational: exits 0 unless a run fails. Run as root, holding the measuring lock:
#
#   flock /tmp/jitterlab-measuring-tests.lock bash bench/loop-pairs.sh BEFORE AFTER
#
# It builds nothing: give it two built binaries (copy one aside before rebuilding over it).
#
# Environment:
#   ROUNDS=5            rounds of one run of each build
#   SECONDS_PER_RUN=10  length of each run, whole seconds
#   INTERVAL=100us      the runs' --interval
#   CPUS=0-N            CPUs to measure (default: every online CPU)
#   LOOP=run            the loop measured: run (the cycle loop) or noise (the noise loop)
#   KEEP=dir            keep the raw results there
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

(($# == 2)) || die "usage: bash bench/loop-pairs.sh BEFORE AFTER (two jitterlab binaries)"
before=$1 after=$2
for bin in "$before" "$after"; do
    [[ -x $bin ]] || die "not an executable: $bin"
done
ROUNDS=${ROUNDS:-5}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
INTERVAL=${INTERVAL:-100us}
CPUS=${CPUS:-$(cat /sys/devices/system/cpu/online)}
LOOP=${LOOP:-run}
[[ $LOOP == run || $LOOP == noise ]] || die "LOOP must be run or noise, got '$LOOP'"
need_positive ROUNDS "$ROUNDS"
need_positive SECONDS_PER_RUN "$SECONDS_PER_RUN"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/loop-pairs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
extra=(--interval "$INTERVAL")

for ((r = 1; r <= ROUNDS; r++)); do
    if ((r % 2)); then order=(before after); else order=(after before); fi
    for which in "${order[@]}"; do
        echo "  round $r/$ROUNDS: $which ..." >&2
        bin=$([[ $which == before ]] && echo "$before" || echo "$after")
        if [[ $LOOP == run ]]; then
            measured_run "$bin" "$tmp/$which-$r" "$which run $r"
        else
            others_start
            "$bin" noise --duration "${SECONDS_PER_RUN}s" --cpus "$CPUS" --quiet \
                --out "$tmp/$which-$r" >"$tmp/$which-$r.log" 2>&1 ||
                { cat "$tmp/$which-$r.log" >&2; die "$which noise run $r failed"; }
            others_pct >"$tmp/$which-$r.others"
        fi
    done
    # ROUND SCOPE FIGURE BEFORE AFTER, then the round's others.
    if [[ $LOOP == run ]]; then
        "$after" compare --json "$tmp/before-$r" "$tmp/after-$r" | flat_compare |
            awk -v r="$r" '$1 ~ /^cpu/ && $2 ~ /^(mean|p50|cpu_time_per_cycle_ns)$/ { print r, $0 }' \
                >>"$tmp/figures"
    else
        python3 - "$r" "$tmp/before-$r/run.json" "$tmp/after-$r/run.json" >>"$tmp/figures" <<'PY'
import json, sys
r, (a, b) = sys.argv[1], [json.load(open(f))["threads"] for f in sys.argv[2:]]
for x, y in zip(a, b):
    print(r, "cpu%d" % x["cpu"], "iteration_ns", x["noise"]["iteration_ns"], y["noise"]["iteration_ns"])
PY
    fi
    echo "$r others $(<"$tmp/before-$r.others") $(<"$tmp/after-$r.others")" >>"$tmp/figures"
done
[[ -n ${KEEP:-} ]] && mkdir -p "$KEEP" && cp -r "$tmp"/*-[0-9]* "$tmp/figures" "$KEEP"/

echo
if [[ $LOOP == run ]]; then
    echo "the measuring loop, $ROUNDS interleaved rounds of $SECONDS_PER_RUN s at --interval $INTERVAL," \
        "CPUs $CPUS; ratio = after / before"
else
    echo "the noise loop, $ROUNDS interleaved rounds of $SECONDS_PER_RUN s of \`jitterlab noise\`," \
        "CPUs $CPUS; ratio = after / before"
fi
echo "  before: $before"
echo "  after:  $after"
echo "(other processes: % of all CPUs during the run, $(others_method); see bench/common.sh)"
[[ $LOOP == noise ]] && awk "$AWK_MEDIAN_CI"'
    function median(k,    i, m, a) {
        m = n[k]
        for (i = 1; i <= m; i++) a[i] = vals[k, i]
        sort_values(a, m)
        return median_sorted(a, m)
    }
    function add(k, v) { vals[k, ++n[k]] = v; sum[k] += v }
    $2 == "others" { o0[$1] = $3; o1[$1] = $4; if ($1 > nr) nr = $1; next }
    { v0[$1, $2] = $4; v1[$1, $2] = $5; cpus[$2] = 1 }
    END {
        for (r = 1; r <= nr; r++) {
            calm = o0[r] <= 5 && o1[r] <= 5
            printf "round %d (%s first; other processes used %s %% / %s %% of the CPUs%s)\n", r,
                r % 2 ? "before" : "after", o0[r], o1[r], calm ? "" : ": DISTURBED"
            for (c in cpus) {
                a = v0[r, c]; b = v1[r, c]
                if (!a) { printf "  %s: a figure is missing\n", c; continue }
                printf "  %s: iteration %.2f -> %.2f ns (%.3fx)\n", c, a, b, b / a
                add("all", b / a); if (calm) add("calm", b / a)
            }
        }
        print ""
        for (s = 1; s <= 2; s++) {
            set = s == 1 ? "all" : "calm"
            name = s == 1 ? "every round and CPU" : "undisturbed rounds (others <= 5 % in both runs)"
            if (!n[set]) { print name ": none"; continue }
            printf "%s (%d ratios): noise-loop cost per iteration %.3fx (median %.3fx)\n", name, n[set],
                sum[set] / n[set], median(set)
        }
    }' "$tmp/figures" && exit 0
pair_ratio_summary "$tmp/figures" before after
