#!/usr/bin/env bash
# Where the BPF back end's cost goes: the kernel's own count of each program's runs and run time
# (kernel.bpf_stats_enabled, read with `bpftool prog show`) during one `jitterlab run --trace
# --trace-backend bpf`, printed per program as runs, runs per second and ns per run, and the sum
# per wakeup of the programs that run between a measuring thread's due time and its clock read
# (the local timer interrupt's entry and exit, the timer's expiry, the thread's wakeup, the switch
# to it): what the back end adds to each sample's latency.
#
# The sysctl is set for the run and put back as it was on every exit path (it also costs: two
# clock reads per program run, counted in the figures). Informational: exits 0 unless the run
# fails. Run as root, holding the measuring lock:
#
#   flock /tmp/jitterlab-measuring-tests.lock bash bench/bpf-program-cost.sh
#
# Environment:
#   SECONDS_PER_RUN=12  length of the run, whole seconds (read 2 s before its end)
#   CPUS=0-N            CPUs to measure (default: every online CPU)
#   JITTERLAB=path      binary to use (default: build target/release/jitterlab)
#   JITTERLAB_ARGS=...  extra options for the run (e.g. "--wake timerfd", "--load hackbench:groups=4")
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

SECONDS_PER_RUN=${SECONDS_PER_RUN:-12}
CPUS=${CPUS:-$(cat /sys/devices/system/cpu/online)}
need_positive SECONDS_PER_RUN "$SECONDS_PER_RUN"
((SECONDS_PER_RUN >= 4)) || die "SECONDS_PER_RUN must be at least 4"
command -v bpftool >/dev/null || die "bpftool not found (Debian: apt install bpftool)"
jitterlab=$(jitterlab_binary)
read -ra extra <<<"${JITTERLAB_ARGS:-}"
stats=/proc/sys/kernel/bpf_stats_enabled
[[ -w $stats ]] || die "$stats is not writable: run as root on a kernel with BPF"
before=$(<"$stats")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bpf-program-cost.XXXXXX")
trap 'echo "$before" >"$stats"; rm -rf "$tmp"' EXIT
echo 1 >"$stats"

"$jitterlab" run --duration "${SECONDS_PER_RUN}s" --cpus "$CPUS" --quiet --trace \
    --trace-backend bpf --out "$tmp/run" ${extra[@]+"${extra[@]}"} >"$tmp/log" 2>&1 &
pid=$!
sleep 2
start=$EPOCHREALTIME
bpftool prog show >"$tmp/start"
sleep $((SECONDS_PER_RUN - 4))
end=$EPOCHREALTIME
bpftool prog show >"$tmp/end"
wait "$pid" || { cat "$tmp/log" >&2; die "the run failed"; }

echo "jitterlab run --trace --trace-backend bpf, ${SECONDS_PER_RUN} s on CPUs $CPUS${JITTERLAB_ARGS:+, $JITTERLAB_ARGS};" \
    "program statistics over $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s of it"
# The programs of this run: those loaded now with the names of bpf/trace.bpf.c's (the kernel
# keeps 15 characters of a name), run_time_ns and run_cnt at both readings.
awk -v secs="$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" '
    FNR == 1 { file++ }
    / tracing +name / && /run_cnt/ {
        for (i = 1; i <= NF; i++) { if ($i == "name") n = $(i + 1); if ($i == "run_time_ns") t = $(i + 1); if ($i == "run_cnt") c = $(i + 1) }
        id = $1
        if (file == 1) { t0[id] = t; c0[id] = c } else if (id in t0) { name[id] = n; dt[id] = t - t0[id]; dc[id] = c - c0[id] }
    }
    END {
        printf "%-32s %12s %10s %10s\n", "program", "runs", "runs/s", "ns/run"
        for (id in name) {
            if (!dc[id]) continue
            printf "%-32s %12d %10.0f %10.0f\n", name[id], dc[id], dc[id] / secs, dt[id] / dc[id]
            per[name[id]] = dt[id] / dc[id]
        }
        # One wakeup from an idle CPU: the timer interrupt, the expiry, the wakeup, the switch.
        split("v_local_timer_entry v_local_timer_exit hrtimer_expire_entry sched_waking sched_switch", path, " ")
        for (i = 1; i <= 5; i++) { sum += per[path[i]]; shown = shown (i > 1 ? " + " : "") sprintf("%.0f", per[path[i]]) }
        printf "\nbetween a due time and the clock read (local timer entry + exit + expiry + waking + switch): %s = %.0f ns per wakeup\n", shown, sum
    }' "$tmp/start" "$tmp/end"
