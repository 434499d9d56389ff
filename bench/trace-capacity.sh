#!/usr/bin/env bash
# How many trace events per second each back end of `run --trace` handles before it loses any.
# A load of a controlled, stepped rate of wakeups runs on the traced CPUs: cyclictest (rt-tests)
# as a jitterlab `exec` load, RATE / THREAD_HZ threads (rounded up) per traced CPU, pinned, all at one
# interval, SCHED_OTHER by default. Every load wakeup is a timer expiry in a timer interrupt and
# two context switches on a traced CPU, the events both back ends record unfiltered (on top of the
# measuring threads' own); its `sched_waking` is filtered out in the kernel unless the load is
# real-time (LOAD_POLICY=fifo). At each step one traced run per back end, in alternating order:
#
#   jitterlab run --duration Ns --cpus CPUS --trace --trace-backend tracefs|bpf --quiet --out DIR \
#       --load 'exec:cyclictest -q -d 0 -t T -a CPUS -i I --policy=P -p PRIO'
#
# From each run's run.json (`trace` section, `duration_ns`, `threads[]`, `cpu_time`) it prints
# the events delivered to user space per second (`events_read` / `duration_ns`: the reader also
# runs for a few ms before and after the measured span, so the rate reads up to ~1 % high on a
# 10 s run), the events lost (`events_lost`, all traced CPUs: run.json has no per-CPU figure),
# the events offered (delivered + lost: what the kernel side produced), the samples the
# recorder dropped, the reader's CPU time per event and share of one CPU, the recorder's share
# (`cpu_time.recorder_thread_ns`), and every other integer counter the `trace` section holds
# (such as a count of the events the BPF programs saw in the kernel, where a version of
# jitterlab records one; "n/a" where none). Then per back end the highest offered rate with no
# event lost and the lowest offered rate with a loss (saying so when a loss came below a rate
# without one), or "no loss up to X" when no step lost anything. Informational: exits 0 unless
# a run fails. Run as root, holding the measuring lock:
#
#   flock /tmp/jitterlab-measuring-tests.lock bash bench/trace-capacity.sh
#
# Environment:
#   RATES="0 10000 ..." load wakeups per second per traced CPU, one step each (0: no load, the
#                       measuring threads alone). Default 0 10000 20000 25000 30000 35000 40000 50000 80000
#   THREAD_HZ=10000     at most this many wakeups per second per load thread (more threads above)
#   SECONDS_PER_RUN=10  length of each run, whole seconds
#   CPUS=0-N            CPUs to measure and load (default: every online CPU)
#   LOAD_POLICY=other   the load's policy: other, or fifo (then priority LOAD_PRIO, default 1;
#                       its wakeups are then traced too, and it competes with the drain side)
#   STOP_AFTER_LOSS=1   stop after the first step at which both back ends lost events (0: all)
#   JITTERLAB=path      binary to use (default: build target/release/jitterlab)
#   JITTERLAB_ARGS=...  extra options for every run (e.g. "--interval 100us")
#   KEEP=dir            keep the raw results there
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

RATES=${RATES:-0 10000 20000 25000 30000 35000 40000 50000 80000}
THREAD_HZ=${THREAD_HZ:-10000}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
CPUS=${CPUS:-$(cat /sys/devices/system/cpu/online)}
LOAD_POLICY=${LOAD_POLICY:-other}
STOP_AFTER_LOSS=${STOP_AFTER_LOSS:-1}
need_positive THREAD_HZ "$THREAD_HZ"
need_positive SECONDS_PER_RUN "$SECONDS_PER_RUN"
for r in $RATES; do [[ $r =~ ^(0|[1-9][0-9]*)$ ]] || die "RATES: '$r' is not a whole number"; done
case $LOAD_POLICY in
other) load_prio=0 ;;
fifo) load_prio=${LOAD_PRIO:-1} && need_positive LOAD_PRIO "$load_prio" ;;
*) die "LOAD_POLICY must be other or fifo, got '$LOAD_POLICY'" ;;
esac
if ! command -v cyclictest >/dev/null; then
    echo "skipped: cyclictest not found (the stepped load); apt-get install rt-tests"
    exit 0
fi
jitterlab=$(jitterlab_binary)
read -ra extra <<<"${JITTERLAB_ARGS:-}"
# The traced CPUs, counted from the list (e.g. 0-1,4 -> 3).
ncpus=$(awk -v l="$CPUS" 'BEGIN { n = split(l, p, ","); for (i = 1; i <= n; i++) {
    if (split(p[i], r, "-") == 2) c += r[2] - r[1] + 1; else c++ }; print c }')
tmp=$(mktemp -d "${TMPDIR:-/tmp}/trace-capacity.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# trace_counters DIR: "name value" for every integer field of run.json's `trace` object (its own
# fields, not those of its arrays), one a line. Relies on serde_json's pretty layout.
trace_counters() {
    awk '/^  "trace": \{/ { on = 1; next }
         on && /^  }/ { exit }
         on && /^    "[a-z_0-9]+": -?[0-9]+,?$/ { k = $1; v = $2; gsub(/[":]/, "", k); sub(/,$/, "", v); print k, v }' \
        "$1/run.json"
}

# run_facts DIR: "duration_ns dropped_samples samples recorder_ns" (the samples the recorder
# dropped and recorded, all threads; the recorder thread's CPU time, -1 when absent).
run_facts() {
    awk 'BEGIN { rec = -1 }
         /^  "duration_ns": / { d = $2 + 0 }
         /^      "dropped_records": / { dr += $2 }
         /^      "samples": / { s += $2 }
         /^    "recorder_thread_ns": / { rec = $2 + 0 }
         END { print d + 0, dr + 0, s + 0, rec }' "$1/run.json"
}

# load_spec RATE: the exec load for RATE wakeups per second per traced CPU, and the rate it
# asks for exactly (cyclictest takes whole us): "SPEC|ACTUAL"; nothing for RATE 0.
load_spec() {
    local rate=$1 per_cpu interval
    ((rate == 0)) && return
    per_cpu=$(((rate + THREAD_HZ - 1) / THREAD_HZ))
    interval=$(((per_cpu * 1000000 + rate / 2) / rate))
    ((interval >= 1)) || die "rate $rate too high for $per_cpu threads per CPU"
    echo "exec:cyclictest -q -d 0 -t $((per_cpu * ncpus)) -a $CPUS -i $interval --policy=$LOAD_POLICY -p $load_prio|$((per_cpu * 1000000 / interval))"
}

# measure BACKEND STEP RATE: one traced run into $tmp/BACKEND-STEP, and its line in figures.
measure() {
    local backend=$1 step=$2 rate=$3 dir=$tmp/$1-$2 spec actual=0 load=()
    spec=$(load_spec "$rate")
    if [[ -n $spec ]]; then
        actual=${spec#*|}
        load=(--load "${spec%|*}")
    fi
    others_start
    "$jitterlab" run --duration "${SECONDS_PER_RUN}s" --cpus "$CPUS" --trace --trace-backend "$backend" \
        --quiet --out "$dir" ${load[@]+"${load[@]}"} ${extra[@]+"${extra[@]}"} >"$dir.log" 2>&1 ||
        { cat "$dir.log" >&2; die "$backend run at step $step ($rate/s per CPU) failed"; }
    local others counters
    others=$(others_pct)
    # STEP BACKEND RATE ACTUAL OTHERS DURATION DROPPED SAMPLES RECORDER_NS name=value...
    counters=$(trace_counters "$dir" | awk '{ printf " %s=%s", $1, $2 }')
    echo "$step $backend $rate $actual $others $(run_facts "$dir")$counters" >>"$tmp/figures"
    [[ -n $spec ]] && echo "step $step: ${spec%|*}" >>"$tmp/loads"
    lost=$(trace_counters "$dir" | awk '$1 == "events_lost" { print $2 }')
}

step=0
for rate in $RATES; do
    step=$((step + 1))
    if ((step % 2)); then order=(tracefs bpf); else order=(bpf tracefs); fi
    lost_both=1
    for backend in "${order[@]}"; do
        echo "  step $step: $rate load wakeups/s per CPU, $backend ..." >&2
        measure "$backend" "$step" "$rate" # not in $(...): others_pct reads this shell's children
        ((${lost:-0} > 0)) || lost_both=0
    done
    if ((STOP_AFTER_LOSS && lost_both)); then
        echo "  both back ends lost events at step $step: stopping (STOP_AFTER_LOSS=0 runs every step)" >&2
        break
    fi
done
[[ -n ${KEEP:-} ]] && mkdir -p "$KEEP" && cp -r "$tmp"/* "$KEEP"/

echo
echo "jitterlab run --trace: events per second each back end handles, $SECONDS_PER_RUN s per run," \
    "CPUs $CPUS ($ncpus traced), load cyclictest $LOAD_POLICY${JITTERLAB_ARGS:+, extra options: $JITTERLAB_ARGS}"
echo "(load: wakeups/s per traced CPU asked of cyclictest; events/s over the run's duration, all" \
    "traced CPUs: delivered = trace.events_read, lost = trace.events_lost, offered = both;"
echo " dropped: samples the recorder dropped;"
echo " reader, recorder: the trace reader's CPU time per event and share of one CPU, the recorder's" \
    "share (it joins the events with the samples); other processes: % of all CPUs, $(others_method))"
[[ -f $tmp/loads ]] && sort -u -t: -k1,1 "$tmp/loads" | sed 's/^/  load at /'
awk '
    BEGIN { known["explain_above_ns"] = known["events_lost"] = known["explained"] = 1
            known["buffer_kb"] = known["events_read"] = known["reader_cpu_ns"] = 1 }
    {
        s = $1; b = $2; rate[s] = $3; actual[s] = $4; oth = $5; dur = $6 / 1e9; drop = $7
        delete f; extra_ = ""
        rec = $9
        for (i = 10; i <= NF; i++) {
            split($i, kv, "="); f[kv[1]] = kv[2]
            if (!(kv[1] in known)) extra_ = extra_ sprintf(" %s %d (%.0f/s)", kv[1], kv[2], dur ? kv[2] / dur : 0)
        }
        ev = ("events_read" in f) ? f["events_read"] : -1
        lost = ("events_lost" in f) ? f["events_lost"] : -1
        eps = (ev >= 0 && dur > 0) ? ev / dur : -1
        # Offered: what the kernel side produced, delivered or lost.
        ops = (ev >= 0 && lost >= 0 && dur > 0) ? (ev + lost) / dur : -1
        rdr = ("reader_cpu_ns" in f) ? f["reader_cpu_ns"] : -1
        printf "step %d %-7s load %6d/s per CPU: offered %s events/s, delivered %s/s, lost %s, dropped %d samples," \
            " reader %s, recorder %s; others %s %%; other trace counters:%s\n", s, b, actual[s],
            (ops >= 0) ? sprintf("%7.0f", ops) : "n/a", (eps >= 0) ? sprintf("%7.0f", eps) : "n/a",
            (lost >= 0) ? lost : "n/a", drop,
            (rdr >= 0 && ev > 0) ? sprintf("%.0f ns/event, %.1f %% of a CPU", rdr / ev, 100 * rdr / 1e9 / dur) : "n/a",
            (rec >= 0 && dur > 0) ? sprintf("%.1f %% of a CPU", 100 * rec / 1e9 / dur) : "n/a",
            oth, (extra_ == "") ? " n/a" : extra_
        key = b SUBSEP s; E[key] = ops; L[key] = lost; R[key] = ev; if (s > ns) ns = s; seen[b] = 1
    }
    END {
        print ""
        split("tracefs bpf", backends, " ")
        for (i = 1; i <= 2; i++) {
            b = backends[i]; if (!(b in seen)) continue
            best = -1; first = -1; top = -1
            for (s = 1; s <= ns; s++) {
                if (!((b SUBSEP s) in E)) continue
                e = E[b, s]; l = L[b, s]; if (e > top) top = e
                if (l == 0 && e > best) { best = e; bests = s }
                if (l > 0 && (first < 0 || e < first)) { first = e; firsts = s; firstl = l; firstr = R[b, s] }
            }
            if (first >= 0) {
                printf "%-7s highest rate with 0 events lost: %s; lowest rate with a loss: %.0f events/s (step %d, %d lost, %.2f %% of those offered)\n",
                    b, (best >= 0) ? sprintf("%.0f events/s (step %d)", best, bests) : "none",
                    first, firsts, firstl, 100 * firstl / (firstr + firstl)
                if (best > first)
                    printf "%-7s   (not a threshold: a higher rate lost nothing; the losses depend on more than the rate)\n", b
            } else
                printf "%-7s no loss up to %.0f events/s (the highest rate reached; the load, not the back end, set the limit)\n", b, top
        }
    }' "$tmp/figures"
