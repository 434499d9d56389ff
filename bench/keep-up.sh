#!/usr/bin/env bash
# Does the drain side keep up under the heaviest load? RUNS runs of SECONDS each under
# `--load hackbench:groups=GROUPS` (1600 processes at 40 groups), alternately without and with
# --trace, every online CPU at the default 1 ms; prints per run and CPU the samples, missed
# periods and dropped records, and the trace events lost; then the totals. Before the drain
# side ran real-time, 8 s runs at 40 groups with --trace dropped up to 25 % of the samples.
#
#   flock /tmp/jitterlab-measuring-tests.lock bash bench/keep-up.sh [RUNS] [SECONDS] [GROUPS]
#   JITTERLAB=path/to/jitterlab ... (default: the release build, built first)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
seconds=${2:-8}
groups=${3:-40}
if [ -z "${JITTERLAB:-}" ]; then
    cargo build --release --quiet --bin jitterlab
    JITTERLAB=target/release/jitterlab
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

dropped_total=0
lost_total=0
for i in $(seq 1 "$runs"); do
    for trace in "" --trace; do
        out=$work/run-$i${trace:+-traced}
        "$JITTERLAB" run --duration "${seconds}s" $trace --load "hackbench:groups=$groups" \
            --quiet --out "$out" >/dev/null 2>"$work/err" || { cat "$work/err"; exit 4; }
        read -r line dropped lost < <(python3 - "$out/run.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
cells = [f"cpu{t['cpu']} {t['samples']} samples, {t['missed_periods']} missed, {t['dropped_records']} dropped"
         for t in r["threads"]]
lost = (r.get("trace") or {}).get("events_lost", 0)
dropped = sum(t["dropped_records"] for t in r["threads"])
print("; ".join(cells).replace(" ", "_"), dropped, lost)
EOF
        )
        printf 'run %d %-8s drain priority %s: %s; trace events lost %s\n' "$i" \
            "${trace:-untraced}" \
            "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["plan"].get("drain_priority"))' "$out/run.json")" \
            "${line//_/ }" "$lost"
        dropped_total=$((dropped_total + dropped))
        lost_total=$((lost_total + lost))
    done
done
echo "total: $dropped_total samples dropped, $lost_total trace events lost in $((runs * 2)) runs of ${seconds} s under hackbench:groups=$groups"
