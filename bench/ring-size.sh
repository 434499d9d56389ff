#!/usr/bin/env bash
# What a larger ring costs the measuring loop: interleaved pairs of runs at 100 us on every
# online CPU, one with a ring of one second of samples (10 000, the default before rings were
# sized in time), one with four seconds (40 000, today's default), compared by the measuring
# threads' CPU time per wakeup (run.json cpu_time: each push writes a slot last touched a ring
# ago, so a ring that outgrows the cache could cost a miss per push) and by mean latency.
# Prints each pair's ratios (4 s / 1 s) and their mean, min and max.
#
#   flock /tmp/jitterlab-measuring-tests.lock bash bench/ring-size.sh [PAIRS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-3}
seconds=${2:-10}
cargo build --release --quiet --bin jitterlab
bin=target/release/jitterlab
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Per wakeup CPU time and mean latency of a run, averaged over its threads: "cpu_ns mean_ns".
figures() {
    python3 - "$1/run.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
threads = r["threads"]
cpu = [m["cpu_time_ns"] / max(1, t["samples"] + t["dropped_records"])
       for m, t in zip(r["cpu_time"]["measuring_threads"], threads)]
mean = [t["mean_ns"] for t in threads]
print(f"{sum(cpu) / len(cpu):.1f} {sum(mean) / len(mean):.1f}")
EOF
}

ratios=()
for i in $(seq 1 "$pairs"); do
    declare -A got=()
    # Alternate which goes first, so that a drift of the machine does not favour one.
    order=(10000 40000)
    ((i % 2 == 0)) && order=(40000 10000)
    for ring in "${order[@]}"; do
        out=$work/run-$i-$ring
        "$bin" run --duration "${seconds}s" --interval 100us --ring-size "$ring" --quiet \
            --out "$out" >/dev/null 2>"$work/err" || { cat "$work/err"; exit 4; }
        got[$ring]=$(figures "$out")
    done
    read -r cpu1 mean1 <<<"${got[10000]}"
    read -r cpu4 mean4 <<<"${got[40000]}"
    ratio=$(awk -v a="$cpu4" -v b="$cpu1" 'BEGIN { printf "%.3f", a / b }')
    ratios+=("$ratio")
    printf 'pair %d: CPU per wakeup %.0f ns (4 s ring) / %.0f ns (1 s ring) = %s; mean latency %.0f / %.0f ns = %.3f\n' \
        "$i" "$cpu4" "$cpu1" "$ratio" "$mean4" "$mean1" "$(awk -v a="$mean4" -v b="$mean1" 'BEGIN { print a / b }')"
    unset got
done
printf '%s\n' "${ratios[@]}" | awk '{ s += $1; if (NR == 1 || $1 < lo) lo = $1; if ($1 > hi) hi = $1 }
    END { printf "CPU per wakeup, 4 s ring / 1 s ring: mean %.3f, min %.3f, max %.3f over %d pairs\n", s / NR, lo, hi, NR }'
