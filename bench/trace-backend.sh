#!/usr/bin/env bash
# The cost of each back end of `jitterlab run --trace`: interleaved runs without --trace, with
# --trace-backend tracefs and with --trace-backend bpf (the order rotates from round to round),
# same settings, compared with `jitterlab compare --json`; prints per round and on average the
# ratios to the untraced run of
#
#   - mean latency, per CPU;
#   - CPU time per wakeup of the measuring threads (run.json cpu_time): the tracepoints (and,
#     with bpf, the programs) the measuring thread itself passes;
#   - CPU time per wakeup of the whole process: adds the trace reader and the joining;
#
# and each back end's reader CPU time per event and events lost. The summary gives the mean and
# the median of the per-CPU, per-round ratios: the median is the figure a stalled run (this
# VM's multi-millisecond stalls land in one run and not its neighbours) cannot move, with the
# sign test's confidence interval of each median (bench/common.sh, AWK_MEDIAN_CI), and the same
# for the p50 latency, the per-wakeup cost without the stalls a run's mean carries. Issue 27's target: bpf's mean
# latency and measuring-thread CPU at most 1.05x the untraced run's. A round where other
# processes used more than 5 % of the CPUs during any of its runs is marked DISTURBED and left
# out of the second summary line. Informational: exits 0 unless a run fails. Run as root,
# holding the measuring lock:
#
#   flock /tmp/jitterlab-measuring-tests.lock bash bench/trace-backend.sh
#
# Environment:
#   ROUNDS=3            rounds of three runs (plain, tracefs, bpf), the order rotating
#   SECONDS_PER_RUN=10  length of each run, whole seconds
#   CPUS=0-N            CPUs to measure (default: every online CPU)
#   JITTERLAB=path      binary to use (default: build target/release/jitterlab)
#   JITTERLAB_ARGS=...  extra options for every run (e.g. "--load hackbench:groups=40")
#   KEEP=dir            keep the raw results there
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
CPUS=${CPUS:-$(cat /sys/devices/system/cpu/online)}
need_positive ROUNDS "$ROUNDS"
need_positive SECONDS_PER_RUN "$SECONDS_PER_RUN"
jitterlab=$(jitterlab_binary)
read -ra extra <<<"${JITTERLAB_ARGS:-}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/trace-backend.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# run KIND ROUND: one run into $tmp/KIND-ROUND; KIND plain, tracefs or bpf.
run() {
    local trace=()
    [[ $1 != plain ]] && trace=(--trace --trace-backend "$1")
    measured_run "$jitterlab" "$tmp/$1-$2" "$1 run $2" ${trace[@]+"${trace[@]}"}
}

rotating_rounds "$ROUNDS" run plain tracefs bpf
for ((r = 1; r <= ROUNDS; r++)); do
    pd=$tmp/plain-$r
    for kind in tracefs bpf; do
        td=$tmp/$kind-$r
        # ROUND KIND SCOPE FIGURE PLAIN TRACED, then the run's facts.
        "$jitterlab" compare --json "$pd" "$td" | flat_compare |
            awk -v r="$r" -v k="$kind" '$2 ~ /^(mean|p50|samples|cpu_time_per_cycle_ns)$/ { print r, k, $0 }' >>"$tmp/figures"
        echo "$r $kind facts $(<"$pd.others") $(<"$td.others")" \
            "$(($(run_figure "$pd" process_user_ns) + $(run_figure "$pd" process_system_ns)))" \
            "$(($(run_figure "$td" process_user_ns) + $(run_figure "$td" process_system_ns)))" \
            "$(run_figure "$td" reader_cpu_ns) $(run_figure "$td" events_read) $(run_figure "$td" events_lost)" \
            >>"$tmp/figures"
    done
done
[[ -n ${KEEP:-} ]] && mkdir -p "$KEEP" && cp -r "$tmp"/* "$KEEP"/

echo
echo "jitterlab run --trace, tracefs and bpf back ends vs without, $ROUNDS interleaved rounds of" \
    "$SECONDS_PER_RUN s, CPUs $CPUS${JITTERLAB_ARGS:+, extra options: $JITTERLAB_ARGS}"
echo "(ratio = traced / untraced; CPU time per wakeup: measuring thread = its CPU time / its" \
    "wakeups; process = user+system time of all jitterlab threads / all wakeups; other threads =" \
    "the process less the measuring threads)"
echo "(other processes: % of all CPUs during the run, $(others_method); see bench/common.sh)"
awk "$AWK_MEDIAN_CI"'
    function add(set, k, v) { sum[set, k] += v; n[set, k]++; val[set, k, n[set, k]] = v }
    function mean(set, k) { return n[set, k] ? sum[set, k] / n[set, k] : 0 }
    # The median of the values added, and its interval (CI_LO, CI_HI, CI_LEVEL; CI_LEVEL 0:
    # too few values for one).
    function median(set, k,    i, m, a) {
        m = n[set, k]; if (!m) return 0
        for (i = 1; i <= m; i++) a[i] = val[set, k, i]
        sort_values(a, m)
        if (!median_ci(a, m)) CI_LEVEL = 0
        return median_sorted(a, m)
    }
    function median_text(set, k,    x) {
        x = median(set, k)
        return CI_LEVEL ? sprintf("%.3fx (%.0f %% interval %.3f-%.3fx)", x, CI_LEVEL, CI_LO, CI_HI) : sprintf("%.3fx", x)
    }
    $3 == "facts" { r = $1; b = $2; oth0[r] = $4; oth[r, b] = $5; proc0[r] = $6; proc1[r, b] = $7
                    rdr[r, b] = $8; evr[r, b] = $9; lost[r, b] = $10; if (r > nr) nr = r; next }
    { v0[$1, $3, $4] = $5; v1[$1, $2, $3, $4] = $6; if ($3 ~ /^cpu/) cpus[$3] = 1 }
    END {
        split("tracefs bpf", backends, " ")
        for (r = 1; r <= nr; r++) {
            calm[r] = oth0[r] <= 5 && oth[r, "tracefs"] <= 5 && oth[r, "bpf"] <= 5
            printf "round %d (other processes used %s / %s / %s %% of the CPUs in the plain / tracefs / bpf runs%s)\n",
                r, oth0[r], oth[r, "tracefs"], oth[r, "bpf"], calm[r] ? "" : ": DISTURBED"
            for (i = 1; i <= 2; i++) {
                b = backends[i]
                for (c in cpus) {
                    m0 = v0[r, c, "mean"]; m1 = v1[r, b, c, "mean"]
                    p0 = v0[r, c, "p50"]; p1 = v1[r, b, c, "p50"]
                    t0 = v0[r, c, "cpu_time_per_cycle_ns"]; t1 = v1[r, b, c, "cpu_time_per_cycle_ns"]
                    printf "  %-7s %s: mean latency %.2f us -> %.2f us (%.3fx)   p50 %.2f us -> %.2f us (%.3fx)" \
                        "   measuring-thread CPU per wakeup %.2f us -> %.2f us (%.3fx)\n", b, c, m0 / 1e3,
                        m1 / 1e3, m1 / m0, p0 / 1e3, p1 / 1e3, p1 / p0, t0 / 1e3, t1 / 1e3, t1 / t0
                    add("all" b, "mean", m1 / m0); add("all" b, "thread", t1 / t0); add("all" b, "p50", p1 / p0)
                    if (calm[r]) { add("calm" b, "mean", m1 / m0); add("calm" b, "thread", t1 / t0); add("calm" b, "p50", p1 / p0) }
                }
                c0 = proc0[r] / v0[r, "overall", "samples"]; c1 = proc1[r, b] / v1[r, b, "overall", "samples"]
                printf "  %-7s process CPU per wakeup %.2f us -> %.2f us (%.3fx); trace reader %.1f ms CPU" \
                    " for %d events (%.0f ns/event), events lost %d\n", b, c0 / 1e3, c1 / 1e3, c1 / c0,
                    rdr[r, b] / 1e6, evr[r, b], evr[r, b] ? rdr[r, b] / evr[r, b] : 0, lost[r, b]
                add("all" b, "proc", c1 / c0); if (calm[r]) add("calm" b, "proc", c1 / c0)
                # The other threads (reader, recorder, the BPF load): the process less the
                # measuring threads (CPU time per wakeup x samples, per CPU). Steadier than the
                # process ratio, whose measuring threads move by 30 % with the load on the VM host.
                h0 = proc0[r]; h1 = proc1[r, b]
                for (c in cpus) {
                    h0 -= v0[r, c, "cpu_time_per_cycle_ns"] * v0[r, c, "samples"]
                    h1 -= v1[r, b, c, "cpu_time_per_cycle_ns"] * v1[r, b, c, "samples"]
                }
                h0 /= v0[r, "overall", "samples"]; h1 /= v1[r, b, "overall", "samples"]
                printf "  %-7s other threads (process less the measuring threads) CPU per wakeup %.2f us" \
                    " -> %.2f us (%+.2f us)\n", b, h0 / 1e3, h1 / 1e3, (h1 - h0) / 1e3
                add("all" b, "others", (h1 - h0) / 1e3); if (calm[r]) add("calm" b, "others", (h1 - h0) / 1e3)
                add("all" b, "rdr", rdr[r, b]); add("all" b, "lost", lost[r, b])
            }
        }
        print ""
        for (s = 1; s <= 2; s++) {
            for (i = 1; i <= 2; i++) {
                b = backends[i]; set = (s == 1 ? "all" : "calm") b
                name = s == 1 ? "mean of all " nr " rounds" : "mean of the undisturbed rounds"
                if (!n[set, "mean"]) { print b ", " name ": none"; continue }
                printf "%-7s %s: mean latency %.3fx, measuring-thread CPU per wakeup %.3fx, process" \
                    " CPU per wakeup %.3fx%s\n", b, name, mean(set, "mean"), mean(set, "thread"),
                    mean(set, "proc"), s == 1 ? sprintf(", reader CPU %.1f ms per run, events lost %d in all",
                    mean(set, "rdr") / 1e6, sum[set, "lost"]) : ""
                printf "%-7s %s, medians (per CPU and round, %d ratios): mean latency %s, p50 latency %s," \
                    " measuring-thread CPU per wakeup %s; per round: process CPU per wakeup %s, the other" \
                    " threads %+.2f us per wakeup\n", b, name, n[set, "mean"], median_text(set, "mean"),
                    median_text(set, "p50"), median_text(set, "thread"), median_text(set, "proc"), median(set, "others")
            }
        }
    }' "$tmp/figures"
