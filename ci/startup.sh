#!/usr/bin/env bash
# Time from exec to the first sample of a 1 ms run, natively: CLOCK_MONOTONIC is read just
# before execve (python3), and the first sample's wake time is its expected_ns + latency_ns in
# samples.bin (the same clock). Prints the median and range over N runs.
# Usage: ci/startup.sh BINARY [N] [extra run options...]; takes the measuring lock.
set -euo pipefail
bin=$1
n=${2:-5}
shift $(($# < 2 ? $# : 2))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for i in $(seq "$n"); do
    flock /tmp/jitterlab-measuring-tests.lock python3 -c '
import os, sys, time
with open(sys.argv[1], "w") as f:
    f.write(str(time.clock_gettime_ns(time.CLOCK_MONOTONIC)))
os.execv(sys.argv[2], sys.argv[2:])' "$work/t0" "$bin" run --duration 100ms --interval 1ms \
        --cpus 0 --samples --out "$work/run$i" "$@" >/dev/null
    python3 -c '
import struct, sys
t0 = int(open(sys.argv[1]).read())
with open(sys.argv[2], "rb") as f:
    magic, size, clock, start, _ = struct.unpack("<8sIIQQ", f.read(32))
    assert magic == b"JLSAMPL1" and clock == 1, (magic, clock)
    cpu, missed, seq, expected, latency, irq = struct.unpack("<IIQQqq", f.read(size)[:40])
    assert seq == 0
print((expected + latency - t0) / 1e6)' "$work/t0" "$work/run$i/samples.bin"
done | sort -n | awk '{ v[NR] = $1 } END { printf "exec to first sample: median %.2f ms (min %.2f, max %.2f, %d runs)\n", v[int((NR + 1) / 2)], v[1], v[NR], NR }'
