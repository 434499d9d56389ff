#!/usr/bin/env bash
# How far one recorder core scales: the real recorder (pinned to CPU 0) drains the real rings
# of 8, 64, 128, 256 and 512 simulated measuring threads at 1 ms, 100 us and 50 us, filled by one
# producer thread (CPU 1), without a trace and with the compact per-wakeup trace records of
# the eBPF back end's design (bench/recorder_scale.rs, src/recorder/scale.rs). For each: the
# rate, the samples dropped (a full ring), the recorder's share of its core and its CPU time
# per sample, the backlog left when the producer stopped. Then, at 50 us, the number of
# simulated CPUs grows by half from 128 until the recorder no longer keeps up (kept_up=no: a
# dropped sample, a backlog of more than one 100 ms round, or more than 90 % of its core): the
# highest rate it keeps up with on one core.
#
#   flock /tmp/jitterlab-measuring-tests.lock bash bench/recorder-scale.sh [SECONDS]
#   BIN=/tmp/recorder-scale-old flock /tmp/jitterlab-measuring-tests.lock bash bench/recorder-scale.sh 3
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-5}

# BIN: a built example to run instead (e.g. an older build copied aside, to interleave).
if [[ -n ${BIN:-} ]]; then
    bin=$BIN
else
    cargo build --release --quiet --example recorder-scale
    bin=target/release/examples/recorder-scale
fi

echo "== the grid (${seconds} s each)"
for trace in none compact; do
    for interval in 1ms 100us 50us; do
        for cpus in 8 64 128 256 512; do
            "$bin" "$cpus" "$interval" "$seconds" "$trace"
        done
    done
done

echo "== the highest rate kept up with at 50 us, compact trace records"
cpus=128
best=""
while ((cpus <= 8192)); do
    line=$("$bin" "$cpus" 50us "$seconds" compact)
    echo "$line"
    behind=$(sed -n 's/.* producer_behind=\([0-9.]*\)ms.*/\1/p' <<<"$line")
    if [[ $line != *" kept_up=yes"* ]]; then
        break
    fi
    if awk -v b="$behind" 'BEGIN { exit !(b > 100) }'; then
        echo "the producer fell ${behind} ms behind: the rate above is the producer's limit, not the recorder's"
        break
    fi
    best=$line
    cpus=$((cpus * 3 / 2))
done
echo "kept up with: ${best:-nothing at 128 CPUs x 50 us}"
