#!/usr/bin/env bash
# Does common.sh's "others" figure (the share of all CPUs other processes used during a run,
# DISTURBED above 5 %) see what it must? Two runs of `jitterlab run` at a short interval: alone,
# then beside a second process that wakes every 100 us for a few us (a bash loop of
# `read -t 0.0001` on an empty FIFO: short timer-driven wakeups, what the scheduler tick misses).
# For each run it prints others as each method of common.sh gives it over the same window
# (cpuacct: the scheduler's run time of every task; idle: all CPUs' time less the timed idle;
# ticks: /proc/stat's tick-charged busy time, the figure before), the busy ticks against the
# tool's CPU time in run.json, and the second process's own run time over the window (its
# /proc/PID/schedstat): the others of the second run should exceed the first's by about that
# much, the tool's own CPU excluded in both. Informational: exits 0 unless a run fails.
#
#   flock /tmp/jitterlab-measuring-tests.lock bash bench/others-check.sh
#
# Environment:
#   SECONDS_PER_RUN=5   length of each run, whole seconds
#   INTERVAL=100us      the run's --interval
#   CPUS=0-N            CPUs to measure (default: every online CPU)
#   JITTERLAB=path      binary to use (default: build target/release/jitterlab)
#   JITTERLAB_ARGS=...  extra options for both runs
#   KEEP=dir            keep the raw results there
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

SECONDS_PER_RUN=${SECONDS_PER_RUN:-5}
INTERVAL=${INTERVAL:-100us}
CPUS=${CPUS:-$(cat /sys/devices/system/cpu/online)}
need_positive SECONDS_PER_RUN "$SECONDS_PER_RUN"
jitterlab=$(jitterlab_binary)
read -ra extra <<<"${JITTERLAB_ARGS:-}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/others-check.XXXXXX")
waker_pid=""
# Where the cpuacct hierarchy has no cpu controller beside it (a group there changes nothing in
# scheduling), the tool and the second process each run in a cpuacct group of their own, for
# the same tasks' run time (cpuacct.usage) against their tick-charged time (cpuacct.stat), a
# comparison that other load on the machine does not blur.
groups=""
if [[ -n $OTHERS_USAGE_FILE ]]; then
    acct=${OTHERS_USAGE_FILE%/cpuacct.usage}
    opts=$(awk -v d="$acct" '$2 == d && $3 == "cgroup" { print "," $4 "," }' /proc/mounts)
    if [[ $opts != *,cpu,* && -w $acct ]] && mkdir "$acct/others-check.$$.tool" "$acct/others-check.$$.waker"; then
        groups=$acct/others-check.$$
    fi
fi
# shellcheck disable=SC2317 # called by the trap
cleanup() {
    if [[ -n $waker_pid ]]; then
        kill "$waker_pid" 2>/dev/null || true
        wait "$waker_pid" 2>/dev/null || true
    fi
    if [[ -n $groups ]]; then rmdir "$groups.tool" "$groups.waker" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT

# group_read NAME: "RUN_NS TICKS" of the cpuacct group NAME (tool or waker), "0 0" without.
group_read() {
    local ns user system _k
    [[ -n $groups ]] || { echo "0 0"; return; }
    read -r ns <"$groups.$1/cpuacct.usage"
    { read -r _k user; read -r _k system; } <"$groups.$1/cpuacct.stat"
    echo "$ns $((user + system))"
}

# in_group NAME COMMAND...: runs COMMAND in the cpuacct group NAME (as it is without groups).
in_group() {
    local name=$1
    shift
    if [[ -n $groups ]]; then
        bash -c 'echo "$$" >"$1/cgroup.procs" && shift && exec "$@"' _ "$groups.$name" "$@"
    else
        "$@"
    fi
}

# waker: wakes every 100 us until killed (the FIFO, opened read-write, never has data nor EOF).
waker() {
    local fd _line
    exec {fd}<>"$tmp/fifo"
    [[ -n $groups ]] && echo "$BASHPID" >"$groups.waker/cgroup.procs"
    while :; do read -r -t 0.0001 -u "$fd" _line || :; done
}

# run_ns PID: the task's run time so far, ns (the first field of its schedstat).
run_ns() { local ns _rest; read -r ns _rest <"/proc/$1/schedstat"; echo "$ns"; }

# busy_ticks: /proc/stat's busy ticks (user nice system irq softirq steal) of all CPUs.
busy_ticks() {
    local _cpu user nice system _idle _iowait irq softirq steal _rest
    read -r _cpu user nice system _idle _iowait irq softirq steal _rest </proc/stat
    echo $((user + nice + system + irq + softirq + steal))
}

# measure NAME: one run into $tmp/NAME; prints its line of figures.
measure() {
    local name=$1 dir=$tmp/$1 w0=0 w1=0 t0 t1 b0 b1 cpuacct idle ticks own g0 g1 k0 k1
    [[ -n $waker_pid ]] && w0=$(run_ns "$waker_pid")
    g0=$(group_read tool) k0=$(group_read waker)
    b0=$(busy_ticks) t0=$(now_us)
    others_start
    in_group tool "$jitterlab" run --duration "${SECONDS_PER_RUN}s" --interval "$INTERVAL" --cpus "$CPUS" \
        --quiet --out "$dir" ${extra[@]+"${extra[@]}"} >"$dir.log" 2>&1 ||
        { cat "$dir.log" >&2; die "run $name failed"; }
    cpuacct=$( ([[ -n $OTHERS_USAGE_FILE ]] && others_pct cpuacct) || echo n/a)
    idle=$(others_pct idle) ticks=$(others_pct ticks)
    b1=$(busy_ticks) t1=$(now_us)
    [[ -n $waker_pid ]] && w1=$(run_ns "$waker_pid")
    g1=$(group_read tool) k1=$(group_read waker)
    own=$(awk -F'[:,]' '/"process_(user|system)_ns"/ { s += $2 } END { print s + 0 }' "$dir/run.json")
    awk -v name="$name" -v wall="$((t1 - t0))" -v n="$(getconf _NPROCESSORS_ONLN)" \
        -v busy="$((b1 - b0))" -v hz="$(getconf CLK_TCK)" -v own="$own" -v waker="$((w1 - w0))" \
        -v ca="$cpuacct" -v id="$idle" -v ti="$ticks" -v g="$g0 $g1" -v k="$k0 $k1" -v grp="$groups" 'BEGIN {
        split(g, G, " "); split(k, K, " ")
        printf "%s: others (%% of all CPUs) by cpuacct %s %%, idle %s %%, ticks %s %% (the figure before)\n",
            name, ca, id, ti
        printf "  /proc/stat busy ticks %.2f s; tool CPU %.2f s (run.json)", busy / hz, own / 1e9
        if (grp != "") printf ", its cpuacct group: run time %.2f s, tick-charged %.2f s",
            (G[3] - G[1]) / 1e9, (G[4] - G[2]) / hz
        print ""
        if (waker) {
            printf "  second process: %.1f %% of all CPUs, %.2f s (its schedstat)", 100 * waker / (wall * 1e3 * n), waker / 1e9
            if (grp != "") printf ", its cpuacct group: run time %.2f s, tick-charged %.2f s",
                (K[3] - K[1]) / 1e9, (K[4] - K[2]) / hz
            print ""
        }
    }'
}

echo "others-check: jitterlab run ${SECONDS_PER_RUN} s at $INTERVAL, CPUs $CPUS," \
    "$(getconf _NPROCESSORS_ONLN) CPUs online; others = % of all CPUs" >&2
measure alone
mkfifo "$tmp/fifo"
waker &
waker_pid=$!
sleep 0.5
measure with-waker
[[ -n ${KEEP:-} ]] && mkdir -p "$KEEP" && cp -r "$tmp"/alone* "$tmp"/with-waker* "$KEEP"/
exit 0
