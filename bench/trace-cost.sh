#!/usr/bin/env bash
# The cost of `jitterlab run --trace`: interleaved runs without and with --trace, same settings,
# compared with `jitterlab compare --json`; prints the ratios traced/untraced of
#
#   - mean latency, per CPU;
#   - CPU time per wakeup of the measuring threads (run.json cpu_time, read by each thread at
#     its end): the tracepoints the measuring thread itself passes;
#   - CPU time per wakeup of the whole process (run.json cpu_time: user + system of every
#     thread / all wakeups): adds the trace reader and the recorder's joining;
#
# and the reader's CPU time per event and the events lost (run.json trace). Target (issue 5):
# mean latency up by at most 10 %. A pair where other processes used more than 5 % of the CPUs
# during either run is marked DISTURBED and left out of the second summary line: on a shared
# machine the noise between runs is larger than tracing's cost. Informational: exits 0 unless
# a run fails. Run as root, holding the measuring lock:
#
#   flock /tmp/jitterlab-measuring-tests.lock bash bench/trace-cost.sh
#
# Environment:
#   PAIRS=3             pairs of runs (untraced/traced), alternating which goes first
#   SECONDS_PER_RUN=10  length of each run, whole seconds
#   CPUS=0-N            CPUs to measure (default: every online CPU)
#   JITTERLAB=path      binary to use (default: build target/release/jitterlab)
#   JITTERLAB_ARGS=...  extra options for both runs (e.g. "--interval 500us")
#   KEEP=dir            keep the raw results there
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

PAIRS=${PAIRS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
CPUS=${CPUS:-$(cat /sys/devices/system/cpu/online)}
need_positive PAIRS "$PAIRS"
need_positive SECONDS_PER_RUN "$SECONDS_PER_RUN"
jitterlab=$(jitterlab_binary)
read -ra extra <<<"${JITTERLAB_ARGS:-}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/trace-cost.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# run KIND PAIR: one run into $tmp/KIND-PAIR; KIND plain or traced. Leaves KIND-PAIR.others
# (common.sh's others_pct).
run() {
    local kind=$1 p=$2
    local dir=$tmp/$kind-$p
    others_start
    "$jitterlab" run --duration "${SECONDS_PER_RUN}s" --cpus "$CPUS" --quiet --out "$dir" \
        $([[ $kind == traced ]] && echo --trace) ${extra[@]+"${extra[@]}"} >"$dir.log" 2>&1 ||
        { cat "$dir.log" >&2; die "$kind run $p failed"; }
    others_pct >"$dir.others"
}

for ((p = 1; p <= PAIRS; p++)); do
    if ((p % 2)); then order=(plain traced); else order=(traced plain); fi
    for kind in "${order[@]}"; do
        echo "  pair $p/$PAIRS: $kind ..." >&2
        run "$kind" "$p"
    done
    pd=$tmp/plain-$p td=$tmp/traced-$p
    # PAIR SCOPE FIGURE UNTRACED TRACED, then the pair's facts.
    "$jitterlab" compare --json "$pd" "$td" | flat_compare |
        awk -v p="$p" '$2 ~ /^(mean|samples|cpu_time_per_cycle_ns)$/ { print p, $0 }' >>"$tmp/figures"
    echo "$p facts $(<"$pd.others") $(<"$td.others")" \
        "$(($(run_figure "$pd" process_user_ns) + $(run_figure "$pd" process_system_ns)))" \
        "$(($(run_figure "$td" process_user_ns) + $(run_figure "$td" process_system_ns)))" \
        "$(run_figure "$td" reader_cpu_ns) $(run_figure "$td" events_read) $(run_figure "$td" events_lost)" \
        >>"$tmp/figures"
done
[[ -n ${KEEP:-} ]] && mkdir -p "$KEEP" && cp -r "$tmp"/* "$KEEP"/

echo
echo "jitterlab run --trace vs without, $PAIRS interleaved pairs of $SECONDS_PER_RUN s, CPUs $CPUS" \
    "${JITTERLAB_ARGS:+, extra options: $JITTERLAB_ARGS}"
echo "(ratio = traced / untraced; CPU time per wakeup: measuring thread = its CPU time / its" \
    "wakeups; process = user+system time of all jitterlab threads / all wakeups)"
echo "(other processes: % of all CPUs during the run, $(others_method); see bench/common.sh)"
awk '
    function add(set, k, v) { sum[set, k] += v; n[set, k]++ }
    function mean(set, k) { return n[set, k] ? sum[set, k] / n[set, k] : 0 }
    $2 == "facts" { p = $1; oth0[p] = $3; oth1[p] = $4; proc0[p] = $5; proc1[p] = $6
                    rdr[p] = $7; evr[p] = $8; lost[p] = $9; if (p > np) np = p; next }
    { v0[$1, $2, $3] = $4; v1[$1, $2, $3] = $5; if ($2 ~ /^cpu/) cpus[$2] = 1 }
    END {
        for (p = 1; p <= np; p++) {
            calm = oth0[p] <= 5 && oth1[p] <= 5
            printf "pair %d (%s first; other processes used %s %% / %s %% of the CPUs%s)\n", p,
                p % 2 ? "untraced" : "traced", oth0[p], oth1[p], calm ? "" : ": DISTURBED"
            for (c in cpus) {
                m0 = v0[p, c, "mean"]; m1 = v1[p, c, "mean"]
                t0 = v0[p, c, "cpu_time_per_cycle_ns"]; t1 = v1[p, c, "cpu_time_per_cycle_ns"]
                printf "  %s: mean latency %.2f us -> %.2f us (%.3fx)   measuring-thread CPU per" \
                    " wakeup %.2f us -> %.2f us (%.3fx)\n", c, m0 / 1e3, m1 / 1e3, m1 / m0,
                    t0 / 1e3, t1 / 1e3, t1 / t0
                add("all", "mean", m1 / m0); add("all", "thread", t1 / t0)
                if (calm) { add("calm", "mean", m1 / m0); add("calm", "thread", t1 / t0) }
            }
            c0 = proc0[p] / v0[p, "overall", "samples"]; c1 = proc1[p] / v1[p, "overall", "samples"]
            printf "  process CPU per wakeup %.2f us -> %.2f us (%.3fx); trace reader %.1f ms CPU" \
                " for %d events (%.0f ns/event), events lost %d\n", c0 / 1e3, c1 / 1e3, c1 / c0,
                rdr[p] / 1e6, evr[p], evr[p] ? rdr[p] / evr[p] : 0, lost[p]
            add("all", "proc", c1 / c0); if (calm) add("calm", "proc", c1 / c0)
        }
        print ""
        for (s = 1; s <= 2; s++) {
            set = s == 1 ? "all" : "calm"
            name = s == 1 ? "mean of all " np " pairs, every CPU" \
                : "mean of the " n["calm", "proc"] + 0 " undisturbed pairs (others <= 5 % in both runs)"
            if (!n[set, "mean"]) { print name ": none"; continue }
            m = mean(set, "mean")
            printf "%s: mean latency %.3fx (target <= 1.100x: %s), measuring-thread CPU per wakeup" \
                " %.3fx, process CPU per wakeup %.3fx\n", name, m, m <= 1.10 ? "PASS" : "MISS",
                mean(set, "thread"), mean(set, "proc")
        }
    }' "$tmp/figures"
