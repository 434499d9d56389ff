#!/usr/bin/env bash
# jitterlab vs rt-tests' cyclictest, same settings, interleaved.
#
# Both tools: one thread per CPU, pinned, SCHED_FIFO 95, mlockall, absolute clock_nanosleep on
# CLOCK_MONOTONIC, 1 ms period, no distance between threads, /dev/cpu_dma_latency held at 0.
# PAIRS pairs of SECONDS_PER_RUN-second runs, alternating which tool goes first. cyclictest's
# output is imported (`jitterlab import`) and the two runs compared (`jitterlab compare --json`);
# this script prints per CPU the ratios jitterlab/cyclictest of mean, p99 and max latency and
# of the measuring threads' CPU time per wakeup, per pair and as the mean over the pairs,
# against the targets of issue 2. Informational: exits 0 unless a run failed.
#
#   flock /tmp/jitterlab-measuring-tests.lock bash bench/vs-cyclictest.sh
#
# Environment:
#   PAIRS=3             number of jitterlab/cyclictest pairs
#   SECONDS_PER_RUN=10  length of each run, whole seconds
#   CPUS=0-N            CPUs to measure (default: every online CPU)
#   JITTERLAB=path      jitterlab binary (default: build target/release/jitterlab)
#   CYCLICTEST=path     cyclictest binary (default: from PATH)
#   JITTERLAB_ARGS=...  extra options for `jitterlab run` (e.g. "--ring-size 1024")
#   KEEP=dir            keep the raw results there
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

PAIRS=${PAIRS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
CPUS=${CPUS:-$(cat /sys/devices/system/cpu/online)}
need_positive PAIRS "$PAIRS"
need_positive SECONDS_PER_RUN "$SECONDS_PER_RUN"
nthreads=$(awk -F, '{ for (i = 1; i <= NF; i++) { n += split($i, r, "-") == 2 ? r[2] - r[1] + 1 : 1 } }
    END { print n }' <<<"$CPUS")

cyclictest=${CYCLICTEST:-$(command -v cyclictest || true)}
if [[ -z $cyclictest || ! -x $cyclictest ]]; then
    echo "skipped: cyclictest not found; apt-get install rt-tests"
    exit 0
fi
jitterlab=$(jitterlab_binary)
read -ra jl_extra <<<"${JITTERLAB_ARGS:-}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vs-cyclictest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# poll_schedstat PID OUT: cyclictest's measuring threads' run time (schedstat's first field, ns,
# the figure CLOCK_THREAD_CPUTIME_ID reads), polled every 0.5 s and every 10 ms in the last
# 1.5 s, so that the last reading is taken at most ~10 ms (~10 of its wakeups, 0.1 % of a 10 s
# run) before each thread exits; cyclictest itself does not report its CPU time. Writes
# "CPU NS" per thread (CPU: where the pinned thread last ran, /proc stat field 39).
poll_schedstat() {
    local pid=$1 tid ns f end_us=$(($(now_us) + SECONDS_PER_RUN * 1000000))
    local -A run_ns cpu_of
    while [[ -d /proc/$pid/task ]]; do
        for t in /proc/"$pid"/task/*; do
            tid=${t##*/}
            [[ $tid == "$pid" ]] && continue # the main thread only waits
            read -r ns _ 2>/dev/null <"$t/schedstat" || continue
            read -ra f 2>/dev/null <"$t/stat" || continue
            run_ns[$tid]=$ns cpu_of[$tid]=${f[38]}
        done
        if (($(now_us) > end_us - 1500000)); then sleep 0.01; else sleep 0.5; fi
    done
    for tid in "${!run_ns[@]}"; do echo "${cpu_of[$tid]} ${run_ns[$tid]}"; done
}

# run_tool TOOL PAIR: one measured run; leaves $tmp/TOOL-PAIR (a result directory) and
# $tmp/TOOL-PAIR.others (the % of the machine other processes used meanwhile: common.sh's
# others_pct, with the tool's whole tree, and the schedstat poller, as its own).
run_tool() {
    local tool=$1 p=$2 rc=0
    others_start
    case $tool in
    jitterlab)
        "$jitterlab" run --duration "${SECONDS_PER_RUN}s" --interval 1000us --distance 0ns \
            --cpus "$CPUS" --policy fifo --priority 95 --wake clock-nanosleep --clock monotonic \
            --pm-qos 0 --quiet --out "$tmp/$tool-$p" ${jl_extra[@]+"${jl_extra[@]}"} \
            >"$tmp/$tool-$p.log" 2>&1 || rc=$?
        others_pct >"$tmp/$tool-$p.others"
        ;;
    cyclictest)
        # Not --nsecs: its 1 ns histogram buckets (an 8 MB array at 1 ms) miss the cache on
        # every wakeup (perf: ~3 % of the thread's time) and would inflate cyclictest's CPU
        # time per wakeup. Its latencies are then whole us, truncated.
        "$cyclictest" --mlockall --affinity="$CPUS" --threads="$nthreads" --policy=fifo \
            --priority=95 --interval=1000 --distance=0 --clock=0 --latency=0 \
            --duration="$SECONDS_PER_RUN" --quiet --histogram=1000 --histfile=/dev/null \
            --json="$tmp/$tool-$p.json" >"$tmp/$tool-$p.log" 2>&1 &
        local pid=$!
        poll_schedstat "$pid" >"$tmp/$tool-$p.sched" &
        wait "$pid" || rc=$?
        wait $! || die "the schedstat poller failed"
        others_pct >"$tmp/$tool-$p.others"
        if ((rc == 0)); then
            "$jitterlab" import "$tmp/$tool-$p.json" --out "$tmp/$tool-$p" \
                >>"$tmp/$tool-$p.log" 2>&1 || rc=$?
        fi
        ;;
    esac
    ((rc == 0)) || { cat "$tmp/$tool-$p.log" >&2; die "$tool run $p failed (exit status $rc)"; }
}

echo "jitterlab vs cyclictest: $PAIRS pairs x ${SECONDS_PER_RUN} s, CPUs $CPUS" >&2
for ((p = 1; p <= PAIRS; p++)); do
    if ((p % 2)); then order=(jitterlab cyclictest); else order=(cyclictest jitterlab); fi
    for tool in "${order[@]}"; do
        echo "  pair $p/$PAIRS: $tool ..." >&2
        run_tool "$tool" "$p"
    done
    # One line per figure: PAIR CPU FIGURE JITTERLAB CYCLICTEST OTHERS_JL OTHERS_CT
    "$jitterlab" compare --json "$tmp/jitterlab-$p" "$tmp/cyclictest-$p" | flat_compare |
        awk -v p="$p" -v sched="$tmp/cyclictest-$p.sched" \
            -v oj="$(<"$tmp/jitterlab-$p.others")" -v oc="$(<"$tmp/cyclictest-$p.others")" '
            BEGIN { while ((getline l < sched) > 0) { split(l, f, " "); ct_ns[f[1]] = f[2] } }
            $1 ~ /^cpu/ {
                cpu = substr($1, 4)
                if ($2 == "samples") print p, cpu, "cycles", $3, $4, oj, oc
                if ($2 == "samples" && (cpu in ct_ns))
                    print p, cpu, "cpu_per_cycle", "-", ct_ns[cpu] / $4, oj, oc
                if ($2 == "cpu_time_per_cycle_ns") print p, cpu, "cpu_per_cycle", $3, "-", oj, oc
                if ($2 == "mean" || $2 == "p99" || $2 == "max") print p, cpu, $2, $3, $4, oj, oc
            }' >>"$tmp/figures"
done
[[ -n ${KEEP:-} ]] && mkdir -p "$KEEP" && cp -r "$tmp"/* "$KEEP"/

echo
echo "jitterlab / cyclictest, $PAIRS interleaved pairs of $SECONDS_PER_RUN s runs, CPUs $CPUS," \
    "SCHED_FIFO 95, 1 ms absolute clock_nanosleep"
echo "(latency: cyclictest's whole-us figures + 0.5 us for its truncation; CPU/wakeup: measuring" \
    "thread's CPU time / its wakeups, jitterlab's from run.json, cyclictest's from schedstat;" \
    "others: % of all CPUs used by other processes during the run: $(others_method);" \
    "ratio < 1: jitterlab lower)"
sort -k2,2n -k1,1n "$tmp/figures" | awk '
    function us(ns) { return ns == "null" ? "n/a" : sprintf("%.2f", ns / 1000) }
    function ratio(a, b) { return (a == "null" || b == "null" || b == 0) ? "" : a / b }
    function show(r) { return r == "" ? "n/a" : sprintf("%.3fx", r) }
    {
        p = $1; cpu = $2; k = $3
        if (!(cpu in seen)) { seen[cpu] = 1; cpus[++ncpu] = cpu }
        others[cpu, p] = $6 " / " $7 " %"
        if ($6 > 5 || $7 > 5) disturbed[p] = 1
        if (k == "cpu_per_cycle") {
            if ($4 != "-") jl[cpu, p, k] = $4
            if ($5 != "-") ct[cpu, p, k] = $5
        } else if (k == "cycles") {
            jl[cpu, p, k] = $4; ct[cpu, p, k] = $5
        } else {
            jl[cpu, p, k] = $4; ct[cpu, p, k] = ($5 == "null") ? "null" : $5 + 500
        }
        if (p > npairs) npairs = p
    }
    END {
        split("mean p99 max cpu_per_cycle", keys, " ")
        split("mean latency|p99 latency|max latency|CPU time/wakeup", label, "|")
        for (c = 1; c <= ncpu; c++) {
            cpu = cpus[c]
            printf "\nCPU %s        %-18s %-18s %-18s %-18s %s\n", cpu, "mean us (ratio)",
                "p99 us (ratio)", "max us (ratio)", "CPU/wakeup us (ratio)", "others"
            for (p = 1; p <= npairs; p++) {
                line = sprintf("  pair %d%s", p, p % 2 ? " jl-1st" : " ct-1st")
                for (i = 1; i <= 4; i++) {
                    k = keys[i]; r = ratio(jl[cpu, p, k], ct[cpu, p, k])
                    if (r != "") { sum[cpu, k] += r; n[cpu, k]++ }
                    line = line sprintf(" %-18s", us(jl[cpu, p, k]) "/" us(ct[cpu, p, k]) " " show(r))
                }
                print line " " others[cpu, p] (p in disturbed ? " DISTURBED" : "") \
                    sprintf("  (%d / %d wakeups)", jl[cpu, p, "cycles"], ct[cpu, p, "cycles"])
            }
            line = sprintf("  mean of %d", n[cpu, "mean"])
            for (i = 1; i <= 4; i++) {
                k = keys[i]; m[k] = n[cpu, k] ? sum[cpu, k] / n[cpu, k] : ""
                line = line sprintf(" %-18s", label[i] " " show(m[k]))
            }
            print line
            target = target sprintf("  CPU %s: CPU time per wakeup %s (target <= 1.000x) %s;" \
                " mean latency %s (target 0.900x-1.100x) %s\n", cpu,
                show(m["cpu_per_cycle"]), m["cpu_per_cycle"] == "" ? "n/a" : m["cpu_per_cycle"] <= 1 ? "PASS" : "MISS",
                show(m["mean"]), m["mean"] == "" ? "n/a" : (m["mean"] >= 0.9 && m["mean"] <= 1.1) ? "PASS" : "MISS")
        }
        for (p in disturbed) d = d " " p
        if (d != "") print "\nnote: other processes used more than 5 % of the CPUs in pair(s)" d \
            "; those figures are disturbed"
        printf "\ntargets (issue 2), on the mean of the pairs:\n%s", target
    }'
