#!/usr/bin/env bash
# jitterlab's IPC wake methods vs rt-tests' IPC programs, same settings, interleaved.
#
#   jitterlab --wake mq        vs  pmqtest     -S   (a POSIX message queue)
#   jitterlab --wake mutex     vs  ptsematest  -S   (a pthread mutex unlocked by the sender)
#   jitterlab --wake sysv-sem  vs  svsematest  -S   (a System V semaphore)
#   jitterlab --wake sigwait   vs  sigwaittest -a -t N  (a signal taken with sigwait)
#   jitterlab --wake signal    vs  signaltest  -a 0 (a real-time signal; see below)
#
# Settings of both: one sender/receiver pair per CPU, both threads of a pair pinned to that
# CPU, SCHED_FIFO 95 for both, 1 ms interval, no distance between pairs, mlockall, threads (or
# processes with BETWEEN=processes: svsematest and sigwaittest -f, jitterlab --ipc-between
# processes; the other methods are then left out, rt-tests has no -f for them). Both measure
# from the sender's clock read right before the wake call to the receiver's right after its
# blocking call returns. rt-tests' sender sends as soon as its receiver asks (the receiver
# sleeps the interval, then posts a "sync" object); jitterlab does the same with
# `--ipc-pace receiver`, the run compared, and hands over through the mechanism under test as
# rt-tests does for mq (a second queue), sigwait and signal (a signal to the sender), through a
# futex for mutex and sysv-sem (src/measure/wake/ipc/handover.rs). One difference is kept:
# rt-tests' signals go through glibc's pthread_kill, which wraps its tgkill in two
# rt_sigprocmask calls (glibc >= 2.34), both between the stamp and the receiver's wake;
# jitterlab makes the one syscall (tgkill, rt_tgsigqueueinfo). jitterlab's default pace (the sender wakes from its
# own timer at the due time, on caches the rest of the system used for an interval) is run too
# and its ratio printed for information: on a busy VM it makes the mean about 1.4-1.8x
# (docs/user-guide.md, "Comparing with rt-tests"). signaltest has no interval and no sender: its
# two threads signal each other back to back on CPU 0 and thread 0 times the round trip of two
# signals; its row compares half of that with one wake.
#
# rt-tests' IPC programs report min, avg and max per pair, no percentiles: the ratios printed
# are jitterlab/rt-tests of the mean and of the max latency (per CPU, each pair of runs, and the
# mean over the pairs). Informational: exits 0 unless a run failed.
#
#   flock /tmp/jitterlab-measuring-tests.lock bash bench/vs-rt-tests-ipc.sh
#
# Environment:
#   PAIRS=3             runs of each tool per method, alternating which goes first
#   SECONDS_PER_RUN=10  length of each run, whole seconds
#   CPUS=0-N            CPUs to measure (default: every online CPU; numbered from 0 without gaps)
#   METHODS="mq mutex sysv-sem sigwait signal"
#   BETWEEN=threads     or processes (sysv-sem and sigwait only)
#   JITTERLAB=path      jitterlab binary (default: build target/release/jitterlab)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

PAIRS=${PAIRS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
CPUS=${CPUS:-$(cat /sys/devices/system/cpu/online)}
METHODS=${METHODS:-mq mutex sysv-sem sigwait signal}
BETWEEN=${BETWEEN:-threads}
case $BETWEEN in
threads) fork=() ;;
processes)
    fork=(-f)
    METHODS=$(tr ' ' '\n' <<<"$METHODS" | grep -xE 'sysv-sem|sigwait' | tr '\n' ' ')
    [[ -n $METHODS ]] || die "BETWEEN=processes: only sysv-sem and sigwait have an rt-tests counterpart with -f"
    ;;
*) die "BETWEEN=$BETWEEN: expected threads or processes" ;;
esac
need_positive PAIRS "$PAIRS"
need_positive SECONDS_PER_RUN "$SECONDS_PER_RUN"
nthreads=$(awk -F, '{ for (i = 1; i <= NF; i++) { n += split($i, r, "-") == 2 ? r[2] - r[1] + 1 : 1 } }
    END { print n }' <<<"$CPUS")

for tool in pmqtest ptsematest svsematest sigwaittest signaltest; do
    command -v "$tool" >/dev/null || { echo "skipped: $tool not found; apt-get install rt-tests"; exit 0; }
done
jitterlab=$(jitterlab_binary)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vs-rt-tests-ipc.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# rt_command METHOD JSON: the rt-tests command line of METHOD's counterpart.
rt_command() {
    local common=(-p 95 -i 1000 -d 0 -D "$SECONDS_PER_RUN" -q --json="$2")
    case $1 in
    mq) echo pmqtest -S "${common[@]}" ;;
    mutex) echo ptsematest -S "${common[@]}" ;;
    sysv-sem) echo svsematest -S "${fork[@]}" "${common[@]}" ;;
    sigwait) echo sigwaittest -a -t "$nthreads" "${fork[@]}" "${common[@]}" ;;
    signal) echo signaltest -a 0 -m -p 95 -D "$SECONDS_PER_RUN" -q --json="$2" ;;
    esac
}

# jl_means DIR: "CPU MEAN_US MAX_US" per thread of a jitterlab run.json.
jl_means() {
    awk -F'[:,]' '
        /"cpu":/ && !c { cpu = $2 + 0; c = 1 }
        /"mean_ns":/ { mean = $2 / 1000 }
        /"max_ns":/ && c { printf "%d %.3f %.3f\n", cpu, mean, $2 / 1000; c = 0 }
    ' < <(sed -n '/"threads": \[/,$p' "$1/run.json")
}

# rt_means JSON: "CPU MEAN_US MAX_US" per receiver of an rt-tests JSON file. A result is an
# object with "avg" and "max", printed at its closing brace: the field order differs between the
# programs (pmqtest & co.: cpu, ..., avg, max in "receiver"; signaltest: max, avg, cpu). signaltest
# times a round trip of two signals (thread 0 -> thread 1 -> thread 0, measured by thread 0;
# thread 1's figure includes thread 0's 10 ms sleep every 16 cycles): only its thread 0 is
# printed, halved, to compare with one wake.
rt_means() {
    awk -F'[:,]' -v hops="$2" '
        /"cpu":/ { cpu = $2 + 0 }
        /"avg":/ { avg = $2 + 0; stats = 1 }
        /"max":/ { max = $2 + 0; stats = 1 }
        /^[[:space:]]*}/ && stats {
            if (!done) printf "%d %.3f %.3f\n", cpu, avg / hops, max / hops
            stats = 0; if (hops > 1) done = 1
        }
    ' "$1"
}

run_one() { # TOOL METHOD PAIR -> $tmp/TOOL-METHOD-PAIR.means; TOOL: jitterlab-PACE or rt
    local tool=$1 m=$2 p=$3 out=$tmp/$1-$2-$3 cpus=$CPUS
    [[ $m == signal ]] && cpus=0
    if [[ $tool == jitterlab-* ]]; then
        "$jitterlab" run --duration "${SECONDS_PER_RUN}s" --interval 1000us --distance 0ns \
            --cpus "$cpus" --policy fifo --priority 95 --wake "$m" --sender-cpu same \
            --ipc-pace "${tool#jitterlab-}" --ipc-between "$BETWEEN" \
            --pm-qos off --quiet --out "$out" >"$out.log" 2>&1 || die "jitterlab --wake $m failed: $(cat "$out.log")"
        jl_means "$out" >"$out.means"
    else
        # shellcheck disable=SC2046
        $(rt_command "$m" "$out.json") >"$out.log" 2>&1 || die "$(rt_command "$m" x) failed: $(cat "$out.log")"
        rt_means "$out.json" "$([[ $m == signal ]] && echo 2 || echo 1)" >"$out.means"
    fi
}

echo "uptime: $(uptime)"
echo "jl: jitterlab --ipc-pace receiver (rt-tests' structure); timer: the default pace, for information"
printf '%-9s %-5s %-4s %10s %10s %8s %10s %10s %8s %10s %8s\n' method pair cpu "jl mean" "rt mean" ratio "jl max" "rt max" ratio "timer mean" ratio
for m in $METHODS; do
    for ((p = 1; p <= PAIRS; p++)); do
        if ((p % 2)); then order=(jitterlab-receiver rt jitterlab-sender-timer)
        else order=(rt jitterlab-receiver jitterlab-sender-timer); fi
        for tool in "${order[@]}"; do run_one "$tool" "$m" "$p"; done
        join <(sort "$tmp/jitterlab-receiver-$m-$p.means") <(sort "$tmp/rt-$m-$p.means") |
            join - <(sort "$tmp/jitterlab-sender-timer-$m-$p.means") |
            awk -v m="$m" -v p="$p" '{ printf "%-9s %-5s %-4s %8.2fus %8.2fus %8.2f %8.1fus %8.1fus %8.2f %8.2fus %8.2f\n",
                m, p, $1, $2, $4, $2 / $4, $3, $5, $3 / $5, $6, $6 / $4 }' | tee -a "$tmp/rows"
    done
done
echo
echo "mean over the pairs of the ratio jitterlab/rt-tests (target 0.8-1.25; timer: the default pace, for information):"
awk '{ n[$1]++; mean[$1] += $6; max[$1] += $9; timer[$1] += $11 }
     END { for (m in n) printf "  %-9s mean %.2f   max %.2f   timer mean %.2f   (%d rows)\n", m, mean[m] / n[m], max[m] / n[m], timer[m] / n[m], n[m] }' "$tmp/rows"
