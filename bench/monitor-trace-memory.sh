#!/usr/bin/env bash
# Do `monitor --trace` and a long `run --trace` keep memory and disk bounded? Each runs for
# SECONDS_PER_RUN under a load, one after the other (monitor first):
#
#   jitterlab monitor --trace --cpus CPUS --quiet --out DIR --listen 127.0.0.1:PORT \
#       --window 3m --segment 1m --retain 3m --load LOAD   (stopped with SIGTERM; /metrics scraped at each sample)
#   jitterlab run --trace --duration Ns --cpus CPUS --quiet --out DIR --load LOAD
#
# Every SAMPLE_EVERY seconds it reads the jitterlab process's VmRSS, VmHWM and Threads
# (/proc/PID/status), its open file descriptors (/proc/PID/fd), the result directory's size
# (`du`: the files' apparent bytes and the blocks allocated, which count the 256 KiB run.json
# keeps allocated beyond its end) and files, and the events files' size (the explanations of
# late wakeups: a run's events.jsonl, or a segmented monitor's events-NNNNNN.jsonl, which
# retention deletes with their segments). It prints the series and, per
# figure, the growth per hour fitted by least squares over the second half of the readings (the
# first half holds the start-up: the rings, the BPF programs or the tracefs buffers, the
# monitor's window filling), the largest reading of each half (a bounded figure's second-half
# maximum stays at the first's: a fitted slope over a sawtooth of segments says little), and the
# fitted line extrapolated to 24 h from the start. The load's processes are not jitterlab's:
# their memory is not counted.
#
# What a short run can show: growth that is steady over minutes (a leak per sample, per event,
# per explanation, a file that grows). It cannot show what happens only at longer scales (the
# monitor's 5-minute window, 1 h segments and 7-day retention by default: the bench shortens
# them with MONITOR_ARGS, so that the window (one slot a second: 180 slots, where the default
# keeps 300) is full before the fitted second half begins, and rotation and deletion happen
# several times within the run), nor rare events (a late wakeup storm) that did not occur. A 24 h figure is an extrapolation of the
# fitted line, not a measurement. Informational: exits 0 unless a run fails. Run as root,
# holding the measuring lock:
#
#   flock /tmp/jitterlab-measuring-tests.lock bash bench/monitor-trace-memory.sh
#
# Environment:
#   SECONDS_PER_RUN=480  length of each of the two runs, whole seconds
#   SAMPLE_EVERY=20      seconds between readings
#   WHICH="monitor run"  which to run, in this order
#   CPUS=0-N             CPUs to measure (default: every online CPU)
#   LOAD=hackbench:groups=4   the load of both (a jitterlab --load spec; "none" for none)
#   MONITOR_ARGS="--window 3m --segment 1m --retain 3m"  the monitor's window and segment plan
#   JITTERLAB=path       binary to use (default: build target/release/jitterlab)
#   JITTERLAB_ARGS=...   extra options for both (e.g. "--trace-backend tracefs")
#   KEEP=dir             keep the series and the result directories there
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

SECONDS_PER_RUN=${SECONDS_PER_RUN:-480}
SAMPLE_EVERY=${SAMPLE_EVERY:-20}
WHICH=${WHICH:-monitor run}
CPUS=${CPUS:-$(cat /sys/devices/system/cpu/online)}
LOAD=${LOAD:-hackbench:groups=4}
MONITOR_ARGS=${MONITOR_ARGS:---window 3m --segment 1m --retain 3m}
need_positive SECONDS_PER_RUN "$SECONDS_PER_RUN"
need_positive SAMPLE_EVERY "$SAMPLE_EVERY"
((SECONDS_PER_RUN >= 4 * SAMPLE_EVERY)) || die "SECONDS_PER_RUN must be at least 4 x SAMPLE_EVERY (a fit over the second half needs 2 readings or more)"
for w in $WHICH; do [[ $w == monitor || $w == run ]] || die "WHICH: '$w' is neither monitor nor run"; done
jitterlab=$(jitterlab_binary)
read -ra extra <<<"${JITTERLAB_ARGS:-}"
read -ra monitor_args <<<"$MONITOR_ARGS"
load=()
[[ $LOAD != none ]] && load=(--load "$LOAD")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/monitor-trace-memory.XXXXXX")
pid=""
cleanup() {
    [[ -n $pid ]] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

# A loopback port nobody listens on (ss lists the ones in use).
free_port() {
    local port
    for port in $(shuf -i 20000-60000 -n 50); do
        ss -Htln "sport = :$port" | grep -q . || { echo "$port"; return; }
    done
    die "no free loopback port found"
}

# reading PID DIR T0: "SECONDS RSS_KIB HWM_KIB THREADS FDS DIR_BYTES DIR_KIB FILES EVENTS_BYTES",
# or nothing when the process is gone (EVENTS_BYTES: the events files, which hold the explanations).
reading() {
    local p=$1 dir=$2 t0=$3 rss hwm threads fds
    [[ -r /proc/$p/status ]] || return 0
    read -r rss hwm threads < <(awk '/^VmRSS:/ { r = $2 } /^VmHWM:/ { h = $2 } /^Threads:/ { t = $2 }
        END { print r + 0, h + 0, t + 0 }' "/proc/$p/status" 2>/dev/null) || return 0
    fds=$(find "/proc/$p/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
    echo "$((($(now_us) - t0) / 1000000)) $rss $hwm $threads $fds" \
        "$(du -sb "$dir" 2>/dev/null | cut -f1) $(du -sk "$dir" 2>/dev/null | cut -f1)" \
        "$(find "$dir" -type f 2>/dev/null | wc -l) $(find "$dir" -maxdepth 1 -type f \( -name events.jsonl -o -name 'events-*.jsonl' \) -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')"
}

# sample KIND DIR [PORT]: readings of $pid every SAMPLE_EVERY s until SECONDS_PER_RUN has passed
# (monitor) or the process has ended (run), into $tmp/KIND.series.
sample() {
    local kind=$1 dir=$2 port=${3:-} t0 next line scrapes=0
    t0=$(now_us)
    next=$SAMPLE_EVERY
    while :; do
        sleep "$(awk -v n="$next" -v t0="$t0" -v now="$(now_us)" 'BEGIN { d = n - (now - t0) / 1e6; print (d > 0) ? d : 0 }')"
        if [[ -n $port ]] && curl -sf "http://127.0.0.1:$port/metrics" >/dev/null; then
            scrapes=$((scrapes + 1))
        fi
        line=$(reading "$pid" "$dir" "$t0")
        [[ -z $line ]] && break
        echo "$line" >>"$tmp/$kind.series"
        echo "    $kind: $line" >&2
        next=$((next + SAMPLE_EVERY))
        # The run's last reading comes before its end, so that its end-of-run work is not in the fit.
        [[ $kind == monitor ]] && ((next > SECONDS_PER_RUN)) && break
        [[ $kind == run ]] && ((next >= SECONDS_PER_RUN)) && break
    done
    [[ -n $port ]] && echo "$scrapes" >"$tmp/$kind.scrapes"
    return 0
}

for kind in $WHICH; do
    dir=$tmp/$kind
    echo "  $kind --trace, $SECONDS_PER_RUN s, readings every $SAMPLE_EVERY s ..." >&2
    if [[ $kind == monitor ]]; then
        port=$(free_port)
        "$jitterlab" monitor --trace --cpus "$CPUS" --quiet --out "$dir" --listen "127.0.0.1:$port" \
            "${monitor_args[@]}" ${load[@]+"${load[@]}"} ${extra[@]+"${extra[@]}"} >"$dir.log" 2>&1 &
        pid=$!
        sample monitor "$dir" "$port"
        kill -TERM "$pid"
        wait "$pid" || { cat "$dir.log" >&2; die "monitor exited non-zero on SIGTERM"; }
    else
        "$jitterlab" run --trace --duration "${SECONDS_PER_RUN}s" --cpus "$CPUS" --quiet --out "$dir" \
            ${load[@]+"${load[@]}"} ${extra[@]+"${extra[@]}"} >"$dir.log" 2>&1 &
        pid=$!
        sample run "$dir"
        wait "$pid" || { cat "$dir.log" >&2; die "run exited non-zero"; }
    fi
    pid=""
    # What the run recorded about its trace: back end, events read and lost, explanations.
    awk '/^  "trace": \{/ { on = 1; next } on && /^  }/ { exit }
         on && /^    "(backend|events_read|events_lost|explained)":/ { gsub(/[",]/, ""); printf "%s %s ", $1, $2 }' \
        "$dir/run.json" >"$tmp/$kind.trace"
    (cd "$dir" && find . -type f -printf '%s %p\n' | sort -rn | head -5) >"$tmp/$kind.files"
done
[[ -n ${KEEP:-} ]] && mkdir -p "$KEEP" && cp -r "$tmp"/* "$KEEP"/

echo
echo "jitterlab --trace for days: memory, fds and disk over $SECONDS_PER_RUN s, CPUs $CPUS, load" \
    "$LOAD${JITTERLAB_ARGS:+, extra options: $JITTERLAB_ARGS}; monitor: $MONITOR_ARGS"
echo "(RSS, HWM: /proc/PID/status VmRSS, VmHWM in KiB; fds: /proc/PID/fd; dir: result directory," \
    "apparent bytes and KiB allocated; slope: least squares over the second half of the readings)"
for kind in $WHICH; do
    [[ -s $tmp/$kind.series ]] || { echo "$kind: no readings"; continue; }
    echo
    echo "$kind --trace: $(cat "$tmp/$kind.trace")$([[ -f $tmp/$kind.scrapes ]] && echo "/metrics scraped $(<"$tmp/$kind.scrapes") times")"
    printf '  %6s %9s %9s %7s %5s %12s %10s %6s %12s\n' t_s RSS_KiB HWM_KiB threads fds dir_bytes dir_KiB files events_bytes
    awk '{ printf "  %6d %9d %9d %7d %5d %12d %10d %6d %12d\n", $1, $2, $3, $4, $5, $6, $7, $8, $9 }' "$tmp/$kind.series"
    echo "  largest files at the end: $(awk '{ printf "%s %d B; ", $2, $1 }' "$tmp/$kind.files")"
    awk '
        { t[NR] = $1; for (c = 2; c <= 9; c++) v[NR, c] = $c }
        END {
            split("x RSS HWM threads fds dir_bytes dir_KiB files events_bytes", name, " ")
            split("x KiB KiB threads fds bytes KiB files bytes", unit, " ")
            from = int(NR / 2) + 1; if (NR - from + 1 < 2) from = NR - 1
            printf "  fit over t = %d .. %d s (%d readings); max: the largest reading of each half\n",
                t[from], t[NR], NR - from + 1
            for (c = 2; c <= 9; c++) {
                m1 = m2 = 0
                for (i = 1; i <= NR; i++) if (i < from) { if (v[i, c] > m1) m1 = v[i, c] } else if (v[i, c] > m2) m2 = v[i, c]
                n = 0; sx = sy = sxx = sxy = 0
                for (i = from; i <= NR; i++) { x = t[i] / 3600; y = v[i, c]; n++; sx += x; sy += y; sxx += x * x; sxy += x * y }
                d = n * sxx - sx * sx
                if (d <= 0) { printf "  %-12s refused: the readings span no time\n", name[c]; continue }
                b = (n * sxy - sx * sy) / d; a = (sy - b * sx) / n
                printf "  %-12s %+14.1f %s/h   max %12d then %12d   at 24 h (fitted line) %14.0f %s\n",
                    name[c], b, unit[c], m1, m2, a + b * 24, unit[c]
            }
        }' "$tmp/$kind.series"
done
