#!/usr/bin/env bash
# samples.bin format 1 against format 2 (issue 17, "Long runs that fit"): the same run three
# times, interleaved: without --samples (the recorder's own cost), with --samples-format 1 and
# with --samples-format 2. Prints, per run and for each format,
#
#   - bytes per sample: (size of samples.bin - its 32-byte header) / samples recorded
#     (run.json threads[].samples, all CPUs);
#   - recorder CPU time per sample: run.json cpu_time.recorder_thread_ns / samples, and the
#     part of it the sample log adds (less the run without --samples);
#
# and the ratios format 2 / format 1. Target: format 2 at most 8 bytes a sample. Informational:
# exits 0 unless a run fails. Run as root, holding the measuring lock:
#
#   flock /tmp/jitterlab-measuring-tests.lock bash bench/samples-format.sh
#
# Environment:
#   ROUNDS=1            rounds of the three runs (the order rotates each round)
#   SECONDS_PER_RUN=60  length of each run, whole seconds
#   INTERVAL=100us      the measuring period
#   CPUS=0-N            CPUs to measure (default: every online CPU)
#   JITTERLAB=path      binary to use (default: build target/release/jitterlab)
#   JITTERLAB_ARGS=...  extra options for every run (e.g. "--wake nanosleep")
#   KEEP=dir            keep the raw results there
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

ROUNDS=${ROUNDS:-1}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-60}
INTERVAL=${INTERVAL:-100us}
CPUS=${CPUS:-$(cat /sys/devices/system/cpu/online)}
need_positive ROUNDS "$ROUNDS"
need_positive SECONDS_PER_RUN "$SECONDS_PER_RUN"
jitterlab=$(jitterlab_binary)
read -ra extra <<<"${JITTERLAB_ARGS:-}"
tmp=${KEEP:-$(mktemp -d "${TMPDIR:-/tmp}/samples-format.XXXXXX")}
mkdir -p "$tmp"
[[ -n ${KEEP:-} ]] || trap 'rm -rf "$tmp"' EXIT

# run.json's recorder CPU time, ns, in DIR.
recorder_ns() { awk -F'[:,]' '/"recorder_thread_ns"/ { print $2 + 0 }' "$1/run.json"; }
# The samples recorded in DIR, all threads (the per-thread "samples": N lines of run.json).
samples() { awk -F'[:,]' '/"samples": [0-9]/ { n += $2 } END { print n + 0 }' "$1/run.json"; }

# measure KIND ROUND: one run into $tmp/KIND-ROUND; KIND none, 1 or 2 (the samples format).
measure() {
    local kind=$1 r=$2 dir=$tmp/$1-$2
    local -a opts=()
    [[ $kind == none ]] || opts=(--samples --samples-format "$kind")
    "$jitterlab" run --duration "${SECONDS_PER_RUN}s" --interval "$INTERVAL" --cpus "$CPUS" \
        --quiet --out "$dir" "${opts[@]}" ${extra[@]+"${extra[@]}"} >"$dir.log" 2>&1 ||
        { cat "$dir.log" >&2; die "run $kind-$r failed"; }
}

echo "samples.bin format 1 vs 2: $ROUNDS x 3 runs of ${SECONDS_PER_RUN}s at $INTERVAL on CPUs $CPUS"
order=(none 1 2)
for ((r = 1; r <= ROUNDS; r++)); do
    for kind in "${order[@]}"; do measure "$kind" "$r"; done
    order=("${order[@]:1}" "${order[0]}")
done

printf '%-6s %-6s %12s %14s %16s %18s\n' round format samples bytes/sample "recorder ns/sample" "log's ns/sample"
for ((r = 1; r <= ROUNDS; r++)); do
    base=$tmp/none-$r
    base_per=$(awk -v t="$(recorder_ns "$base")" -v n="$(samples "$base")" 'BEGIN { print t / n }')
    printf '%-6s %-6s %12s %14s %16.1f %18s\n' "$r" none "$(samples "$base")" - "$base_per" -
    for f in 1 2; do
        dir=$tmp/$f-$r
        n=$(samples "$dir")
        size=$(stat -c %s "$dir/samples.bin")
        awk -v r="$r" -v f="$f" -v n="$n" -v size="$size" -v t="$(recorder_ns "$dir")" -v b="$base_per" \
            'BEGIN { printf "%-6s %-6s %12d %14.2f %16.1f %18.1f\n", r, f, n, (size - 32) / n, t / n, t / n - b }' |
            tee -a "$tmp/rows"
    done
done
# Means over the rounds and the ratios 2/1.
awk '
    { bytes[$2] += $4; rec[$2] += $5; log_[$2] += $6; k[$2]++ }
    END {
        for (f = 1; f <= 2; f++)
            printf "format %d: %.2f bytes/sample, recorder %.1f ns/sample (sample log %.1f ns/sample)\n",
                f, bytes[f] / k[f], rec[f] / k[f], log_[f] / k[f]
        printf "format 2 / format 1: bytes %.3f, recorder CPU time %.3f\n",
            bytes[2] / bytes[1], rec[2] / rec[1]
    }' "$tmp/rows"
