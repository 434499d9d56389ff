#!/usr/bin/env bash
# Start-up of two builds interleaved (issue 44): PAIRS times, one `ci/startup.sh` run of
# BEFORE then one of AFTER (each run takes the measuring lock itself), then each build's
# summary (`ci/startup.sh --summarize`: exec to first sample, its steps from exec and their
# shares where the build records them) and the ratio of the medians of exec to first sample.
#
# Usage: bash bench/startup-pairs.sh BEFORE AFTER [PAIRS] [extra run options...]
# KEEP=DIR keeps each run's JSON line (before.jsonl, after.jsonl) in DIR.
set -euo pipefail
before=$1 after=$2
pairs=${3:-6}
shift $(($# < 3 ? $# : 3))
here=$(cd "$(dirname "$0")/.." && pwd)
[[ $pairs =~ ^[1-9][0-9]*$ ]] || { echo "${0##*/}: PAIRS must be a positive whole number, got '$pairs'" >&2; exit 1; }
out=${KEEP:-$(mktemp -d)}
[[ -n ${KEEP:-} ]] || trap 'rm -rf "$out"' EXIT
mkdir -p "$out"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$pairs"); do
    STEPS_OUT=$out/before.jsonl bash "$here/ci/startup.sh" "$before" 1 "$@" >/dev/null
    STEPS_OUT=$out/after.jsonl bash "$here/ci/startup.sh" "$after" 1 "$@" >/dev/null
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== before: $before"
bash "$here/ci/startup.sh" --summarize "$out/before.jsonl"
echo "== after: $after"
bash "$here/ci/startup.sh" --summarize "$out/after.jsonl"
python3 -c '
import json, sys
med = lambda f: sorted(json.loads(l)["total"] for l in open(f))[(sum(1 for _ in open(f)) - 1) // 2]
print("ratio of the medians of exec to first sample, after/before: %.2f" % (med(sys.argv[2]) / med(sys.argv[1])))' \
    "$out/before.jsonl" "$out/after.jsonl"
