#!/usr/bin/env bash
# Speed and memory of `jitterlab report` (and `compare`) on long runs: 2 CPUs woken every 1 ms,
# one interval histogram per CPU per second (86 400 per CPU per day), made by bench/gen_24h.rs
# with the log's summary beside it. For each LENGTH (default 24h; whole hours, or a duration
# such as 7d) it prints the wall time and maximum resident memory (GNU time) of the report
# alone and with --plots (SVG and PNG files), the report's time per day of run, and with
# COMPARE=1 the same for `jitterlab compare` of two runs of that length (seeds 24 and 25).
# Targets (issue 26): a report under 10 s and 1 GiB, a compare under 10 s. Each is run RUNS
# times (default 3); best and worst are printed with their ratio to the target.
#
#   flock /tmp/jitterlab-measuring-tests.lock bash bench/report-speed.sh [LENGTH...]
#   flock /tmp/jitterlab-measuring-tests.lock bash bench/report-speed.sh 1d 3d 7d 30d
#   COMPARE=1 flock /tmp/jitterlab-measuring-tests.lock bash bench/report-speed.sh 7d
#
# COMPARE=self compares the seed-24 run with itself: the same work as a pair (both runs read
# whole, the same cells, the same bootstrap: its cost depends on the cells' sizes, not on
# their values), for when there is no time to generate the second run (a 30-day run takes
# 20-60 minutes); the line is labelled `compare (self)`. REPORT=0 skips the report's lines.
#
# A 30-day run's latency.hlog is about 3.5 GB: each length's runs are deleted before the next
# is made. KEEP=DIR keeps them (DIR/LENGTH-a, DIR/LENGTH-b) and reuses them on the next call.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- 24h
runs=${RUNS:-3}
[ -x /usr/bin/time ] || { echo "needs GNU time (apt-get install time)"; exit 3; }

nice -n 19 cargo build --release --quiet --bin jitterlab --example gen-24h
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
jl=target/release/jitterlab

# days LENGTH: the length in days (for the time per day), from whole hours or a duration.
days() {
    case $1 in
        *[!0-9]*) awk -v l="$1" 'BEGIN {
            n = l + 0; u = substr(l, length(n "") + 1)
            f = (u == "d") ? 1 : (u == "h") ? 1 / 24 : (u == "m") ? 1 / 1440 : (u == "s") ? 1 / 86400 : -1
            if (f < 0) { print "bad LENGTH " l > "/dev/stderr"; exit 2 }
            print n * f }' ;;
        *) awk -v h="$1" 'BEGIN { print h / 24 }' ;;
    esac
}

# generate DIR LENGTH SEED: a synthetic run, unless KEEP already holds it.
generate() {
    if [ -f "$1/run.json" ]; then
        echo "reusing $1"
        return
    fi
    mkdir -p "$(dirname "$1")"
    echo "generating a $2, 2-CPU, 1 ms run (seed $3) ..."
    target/release/examples/gen-24h "$1" "$2" "$3"
    ls -l "$1/latency.hlog" "$1/latency.hlog.summary" |
        awk '{ printf "  %s: %.0f MB\n", $NF, $5 / 1e6 }'
}

# measure LABEL DAYS TARGET_S, then the command: RUNS runs, best and worst wall time, max RSS.
measure() {
    local label=$1 d=$2 target=$3; shift 3
    local times=() rss=()
    for _ in $(seq "$runs"); do
        /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null 2>"$work/err" || {
            cat "$work/err"; exit 4; }
        read -r t m <"$work/time"
        times+=("$t"); rss+=("$m")
    done
    printf '%s\n' "${times[@]}" | sort -n >"$work/t"
    printf '%s\n' "${rss[@]}" | sort -n >"$work/m"
    awk -v label="$label" -v d="$d" -v target="$target" -v tfile="$work/t" -v mfile="$work/m" 'BEGIN {
        getline best < tfile; worst = best; while ((getline x < tfile) > 0) worst = x
        mmax = 0; while ((getline y < mfile) > 0) if (y > mmax) mmax = y
        printf "%-24s wall best %.2f s, worst %.2f s (%.2f / %.2f of the %d s target), %.3f s per day of run; max RSS %.0f MiB (%.3f of 1 GiB)\n",
            label, best, worst, best / target, worst / target, target, best / d, mmax / 1024, mmax / 1048576 }'
}

for length in "$@"; do
    d=$(days "$length")
    base=${KEEP:-$work/runs}
    a=$base/$length-a
    b=$base/$length-b
    echo "== $length ($d days)"
    generate "$a" "$length" 24
    if [ "${REPORT:-1}" != 0 ]; then
        measure "report $length" "$d" 10 $jl report "$a" -o "$work/report.html"
        measure "report --plots $length" "$d" 10 $jl report "$a" -o "$work/report.html" \
            --plots "$work/plots"
        ls -l "$work/report.html" | awk '{ printf "report.html: %.0f kB\n", $5 / 1e3 }'
        rm -rf "$work/plots" "$work/report.html"
    fi
    case ${COMPARE:-0} in
        1)
            generate "$b" "$length" 25
            measure "compare $length" "$d" 10 $jl compare "$a" "$b" ;;
        self) measure "compare (self) $length" "$d" 10 $jl compare "$a" "$a" ;;
        0) ;;
        *) echo "COMPARE is 0, 1 or self, got '$COMPARE'" >&2; exit 2 ;;
    esac
    [ -n "${KEEP:-}" ] || rm -rf "$a" "$b"
done
