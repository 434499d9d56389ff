#!/usr/bin/env bash
# Where the BPF back end's cost goes: the kernel's own count of each program's runs and run time
# (kernel.bpf_stats_enabled, read with `bpftool prog show`) during one `jitterlab run --trace
# --trace-backend bpf`, printed per program as runs, runs per second and ns per run, and the sum
# per wakeup of the programs that run between a measuring thread's due time and its clock read
# (the local timer interrupt's entry and exit, the timer's expiry, the thread's wakeup, the switch
# to it): what the back end adds to each sample's latency.
#
# With ROUNDS > 1, that many runs, and with JITTERLAB_B a second build run after (odd rounds) or
# before (even rounds) the first in every round: then a line per run, and per build the median
# of each program's ns per run and of the sum on the path, with the sign test's interval of the
# median (bench/common.sh), and with JITTERLAB_B the per-round difference of the sums, B less A.
# The same binary's sum moves by a third within minutes on the development VM (1 389-1 914 ns
# over 20 minutes, bench/README.md, issue 44, stop 65): one pair of runs cannot tell a change of
# 100 ns; the paired differences of 8 rounds or more can.
#
# The sysctl is set for each run and put back as it was on every exit path (it also costs: two
# clock reads per program run, counted in the figures). Informational: exits 0 unless a run
# fails. Run as root, holding the measuring lock:
#
#   flock /tmp/jitterlab-measuring-tests.lock bash bench/bpf-program-cost.sh
#
# Environment:
#   SECONDS_PER_RUN=12  length of each run, whole seconds (read 2 s before its end)
#   ROUNDS=1            runs (of each build)
#   CPUS=0-N            CPUs to measure (default: every online CPU)
#   JITTERLAB=path      binary to use (default: build target/release/jitterlab)
#   JITTERLAB_B=path    a second binary, interleaved with the first (e.g. another BPF object)
#   JITTERLAB_ARGS=...  extra options for the run (e.g. "--wake timerfd", "--load hackbench:groups=4")
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

SECONDS_PER_RUN=${SECONDS_PER_RUN:-12}
ROUNDS=${ROUNDS:-1}
CPUS=${CPUS:-$(cat /sys/devices/system/cpu/online)}
need_positive SECONDS_PER_RUN "$SECONDS_PER_RUN"
need_positive ROUNDS "$ROUNDS"
((SECONDS_PER_RUN >= 4)) || die "SECONDS_PER_RUN must be at least 4"
command -v bpftool >/dev/null || die "bpftool not found (Debian: apt install bpftool)"
jitterlab=$(jitterlab_binary)
builds=(A)
if [[ -n ${JITTERLAB_B:-} ]]; then
    [[ -x $JITTERLAB_B ]] || die "JITTERLAB_B=$JITTERLAB_B is not an executable"
    builds=(A B)
fi
read -ra extra <<<"${JITTERLAB_ARGS:-}"
stats=/proc/sys/kernel/bpf_stats_enabled
[[ -w $stats ]] || die "$stats is not writable: run as root on a kernel with BPF"
before=$(<"$stats")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bpf-program-cost.XXXXXX")
trap 'echo "$before" >"$stats"; rm -rf "$tmp"' EXIT
echo 1 >"$stats"

# The programs on a wakeup's path from an idle CPU: the timer interrupt, the expiry, the wakeup,
# the switch.
PATH_PROGRAMS="v_local_timer_entry v_local_timer_exit hrtimer_expire_entry sched_waking sched_switch"

# one_run BIN OUT: one traced run of BIN; writes `PROGRAM RUNS SECONDS NS_PER_RUN` lines to OUT
# for the programs of this run (those loaded now with the names of bpf/trace.bpf.c's: the
# kernel keeps 15 characters of a name) that ran between the two readings.
one_run() {
    local bin=$1 out=$2 pid start end
    "$bin" run --duration "${SECONDS_PER_RUN}s" --cpus "$CPUS" --quiet --trace \
        --trace-backend bpf --out "$tmp/run" ${extra[@]+"${extra[@]}"} >"$tmp/log" 2>&1 &
    pid=$!
    sleep 2
    start=$EPOCHREALTIME
    bpftool prog show >"$tmp/start"
    sleep $((SECONDS_PER_RUN - 4))
    end=$EPOCHREALTIME
    bpftool prog show >"$tmp/end"
    wait "$pid" || { cat "$tmp/log" >&2; die "the run of $bin failed"; }
    rm -rf "$tmp/run"
    awk -v secs="$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" '
        FNR == 1 { file++ }
        / tracing +name / && /run_cnt/ {
            for (i = 1; i <= NF; i++) { if ($i == "name") n = $(i + 1); if ($i == "run_time_ns") t = $(i + 1); if ($i == "run_cnt") c = $(i + 1) }
            id = $1
            if (file == 1) { t0[id] = t; c0[id] = c } else if (id in t0) { name[id] = n; dt[id] = t - t0[id]; dc[id] = c - c0[id] }
        }
        END { for (id in name) if (dc[id]) printf "%s %d %.1f %.0f\n", name[id], dc[id], secs, dt[id] / dc[id] }
    ' "$tmp/start" "$tmp/end" >"$out"
}

for ((r = 1; r <= ROUNDS; r++)); do
    order=("${builds[@]}")
    ((r % 2 == 0 && ${#builds[@]} == 2)) && order=(B A)
    for b in "${order[@]}"; do
        bin=$jitterlab
        [[ $b == B ]] && bin=$JITTERLAB_B
        ((ROUNDS > 1 || ${#builds[@]} > 1)) && echo "  round $r/$ROUNDS: $b ($bin) ..." >&2
        one_run "$bin" "$tmp/$b-$r"
    done
done

what="jitterlab run --trace --trace-backend bpf, ${SECONDS_PER_RUN} s on CPUs $CPUS${JITTERLAB_ARGS:+, $JITTERLAB_ARGS}"
if ((ROUNDS == 1 && ${#builds[@]} == 1)); then
    echo "$what; program statistics over $(awk 'NR == 1 { print $3 }' "$tmp/A-1") s of it"
    awk -v path="$PATH_PROGRAMS" '
        { runs[$1] = $2; secs = $3; per[$1] = $4; names[NR] = $1 }
        END {
            printf "%-32s %12s %10s %10s\n", "program", "runs", "runs/s", "ns/run"
            for (i = 1; i <= NR; i++) printf "%-32s %12d %10.0f %10.0f\n", names[i], runs[names[i]], runs[names[i]] / secs, per[names[i]]
            n = split(path, p, " ")
            for (i = 1; i <= n; i++) { sum += per[p[i]]; shown = shown (i > 1 ? " + " : "") sprintf("%.0f", per[p[i]]) }
            printf "\nbetween a due time and the clock read (local timer entry + exit + expiry + waking + switch): %s = %.0f ns per wakeup\n", shown, sum
        }' "$tmp/A-1"
    exit 0
fi

echo "$what; $ROUNDS rounds; ns per program run (the kernel's statistics, 2 s into each run until 2 s before its end)"
echo "A: $jitterlab${JITTERLAB_B:+; B: $JITTERLAB_B (run first in even rounds)}"
for b in "${builds[@]}"; do
    for ((r = 1; r <= ROUNDS; r++)); do awk -v b="$b" -v r="$r" '{ print b, r, $1, $4 }' "$tmp/$b-$r"; done
done | awk -v path="$PATH_PROGRAMS" "$AWK_MEDIAN_CI"'
    function summary(label, k,    i, m, a) {
        m = n[k]; for (i = 1; i <= m; i++) a[i] = v[k, i]
        sort_values(a, m)
        return sprintf("%s median %.0f ns%s", label, median_sorted(a, m),
            median_ci(a, m) ? sprintf(" (%.0f %% interval %.0f-%.0f)", CI_LEVEL, CI_LO, CI_HI) : "")
    }
    function add(k, x) { v[k, ++n[k]] = x }
    { val[$1, $2, $3] = $4; progs[$3] = 1; builds[$1] = 1; if ($2 > rounds) rounds = $2 }
    END {
        np = split(path, p, " ")
        for (b in builds) for (r = 1; r <= rounds; r++) {
            s = 0; line = ""
            for (i = 1; i <= np; i++) { s += val[b, r, p[i]]; line = line sprintf(" %s %.0f", p[i], val[b, r, p[i]]) }
            sum[b, r] = s; add(b SUBSEP "path", s)
            for (q in progs) if ((b, r, q) in val) add(b SUBSEP q, val[b, r, q])
            printf "%s round %d: path %.0f ns per wakeup (%s )\n", b, r, s, line
        }
        print ""
        for (b in builds) {
            printf "%s: %s\n", b, summary("on the path, sum:", b SUBSEP "path")
            for (q in progs) if (n[b SUBSEP q]) printf "%s:   %-28s %s\n", b, q, summary("", b SUBSEP q)
        }
        if (("B", 1) in sum) {
            for (r = 1; r <= rounds; r++) add("diff", sum["B", r] - sum["A", r])
            printf "\nB less A, paired by round: the path sum%s\n", summary("", "diff")
            for (i = 1; i <= np; i++) {
                for (r = 1; r <= rounds; r++) add("diff" p[i], val["B", r, p[i]] - val["A", r, p[i]])
                printf "  %-28s %s\n", p[i], summary("", "diff" p[i])
            }
        }
    }'
