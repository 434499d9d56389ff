#!/usr/bin/env bash
# Speed of `jitterlab report` on a day-long run: 2 CPUs woken every 1 ms for 24 h, one interval
# histogram per CPU per second (86 400 per CPU), made by bench/gen_24h.rs. Prints wall time and
# maximum resident memory (GNU time) of the report alone and of the report with --plots (SVG
# and PNG files), against the targets: under 5 s and under 1 GiB. Each is run 3 times; the
# ratio to the target is printed for the best and the worst run.
#
#   flock /tmp/jitterlab-measuring-tests.lock bash bench/report-speed.sh [HOURS]
set -euo pipefail
cd "$(dirname "$0")/.."
hours=${1:-24}
[ -x /usr/bin/time ] || { echo "needs GNU time (apt-get install time)"; exit 3; }

cargo build --release --quiet --bin jitterlab --example gen-24h
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "generating a ${hours} h, 2-CPU, 1 ms run ..."
target/release/examples/gen-24h "$work/run" "$hours"
ls -l "$work/run/latency.hlog" | awk '{ printf "latency.hlog: %.0f MB\n", $5 / 1e6 }'

measure() { # label, then the command
    local label=$1; shift
    local times=() rss=()
    for _ in 1 2 3; do
        /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null 2>"$work/err" || {
            cat "$work/err"; exit 4; }
        read -r t m <"$work/time"
        times+=("$t"); rss+=("$m")
    done
    printf '%s\n' "${times[@]}" | sort -n >"$work/t"
    printf '%s\n' "${rss[@]}" | sort -n >"$work/m"
    awk -v label="$label" -v tfile="$work/t" -v mfile="$work/m" 'BEGIN {
        getline best < tfile; worst = best; while ((getline x < tfile) > 0) worst = x
        mmax = 0; while ((getline y < mfile) > 0) if (y > mmax) mmax = y
        printf "%-22s wall best %.2f s, worst %.2f s (%.2f / %.2f of the 5 s target); max RSS %.0f MiB (%.3f of 1 GiB)\n",
            label, best, worst, best / 5, worst / 5, mmax / 1024, mmax / 1048576 }'
}

measure "report" target/release/jitterlab report "$work/run" -o "$work/report.html"
measure "report --plots" target/release/jitterlab report "$work/run" -o "$work/report.html" \
    --plots "$work/plots"
ls -l "$work/report.html" | awk '{ printf "report.html: %.0f kB\n", $5 / 1e3 }'
