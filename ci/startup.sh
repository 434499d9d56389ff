#!/usr/bin/env bash
# Time from exec to the first sample of a 1 ms run, natively: CLOCK_MONOTONIC is read just
# before execve (python3), and the first sample's wake time is its expected_ns + latency_ns in
# samples.bin (the same clock), read in either format (JLSAMPL2, the default, or JLSAMPL1 with
# `--samples-format 1`; docs/result-format.md). Prints the median and range over N runs of
#
#   - exec to the first sample;
#   - exec to the first due time (samples.bin's start_ns): the start-up proper. It holds the
#     system snapshot, the set-up, and the 50 ms lead-in from fixing the start to the first
#     due time. The snapshot once waited 100 ms for a live steal-time sample before the
#     lead-in (start-up about 165 ms, ~15 ms of it work); a run now measures steal over
#     itself instead (run.json `steal`, its first reading as the lead-in begins), counted
#     below;
#   - how late the first wakeup was (first sample less first due time).
#
# Usage: ci/startup.sh BINARY [N] [extra run options...]; takes the measuring lock per run.
set -euo pipefail
bin=$1
n=${2:-5}
shift $(($# < 2 ? $# : 2))
[[ -x $bin ]] || { echo "${0##*/}: not an executable: $bin" >&2; exit 1; }
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "${0##*/}: N must be a positive whole number, got '$n'" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for i in $(seq "$n"); do
    flock /tmp/jitterlab-measuring-tests.lock python3 -c '
import os, sys, time
with open(sys.argv[1], "w") as f:
    f.write(str(time.clock_gettime_ns(time.CLOCK_MONOTONIC)))
os.execv(sys.argv[2], sys.argv[2:])' "$work/t0" "$bin" run --duration 100ms --interval 1ms \
        --cpus 0 --samples --out "$work/run$i" "$@" >/dev/null
    # One line per run: exec-to-first-sample exec-to-first-due first-lateness (ms) steal-sampled
    python3 -c '
import json, struct, sys, zlib

def varint(b, i):
    v = s = 0
    while True:
        v |= (b[i] & 0x7f) << s; s += 7; i += 1
        if b[i - 1] < 0x80: return v, i

def zz(v): return (v >> 1) ^ -(v & 1)

def firsts(f):
    """(seq, expected_ns, latency_ns) of every sample with seq 0, in either format."""
    magic, size, clock, start, _ = struct.unpack("<8sIIQQ", f.read(32))
    assert clock == 1, ("not CLOCK_MONOTONIC", clock)
    out = []
    if magic == b"JLSAMPL1":
        assert size >= 40, size
        while len(rec := f.read(size)) == size:
            _, _, seq, exp, lat, _ = struct.unpack("<IIQQqq", rec[:40])
            if seq == 0: out.append((exp, lat))
        return start, out
    assert magic == b"JLSAMPL2", magic
    M = 2**64
    while len(h := f.read(12)) == 12:
        size, count, crc = struct.unpack("<III", h)
        p = f.read(size)
        if len(p) < size or zlib.crc32(h[:8] + p) != crc: break  # torn last block
        i, last, prev = 0, None, {}
        for _ in range(count):
            tag = p[i]; i += 1
            if tag & 1: last, i = varint(p, i)
            s = prev.get(last)
            seq = s[0] + 1 if s else 0
            if tag & 2: d, i = varint(p, i); seq = (seq + zz(d)) % M
            periods = (seq - s[0] + s[2]) % M if s else 0
            exp = (s[1] + s[3] * periods) % M if s else 0
            if tag & 4: d, i = varint(p, i); exp = (exp + zz(d)) % M
            missed = 0
            if tag & 8: missed, i = varint(p, i)
            if tag & 16: _, i = varint(p, i)
            d, i = varint(p, i); lat = zz(d)
            period = (exp - s[1]) % M if s and periods == 1 else (s[3] if s else 0)
            prev[last] = [seq, exp, missed, period]
            if seq == 0: out.append((exp, lat))
        assert i == size, ("block does not decode to its size", i, size)
    return start, out

t0 = int(open(sys.argv[1]).read())
with open(sys.argv[2], "rb") as f:
    start, first = firsts(f)
assert first, "no sample with seq 0"
assert all(exp == start for exp, _ in first), ("a first due time is not the run start", first, start)
wake = min(exp + lat for exp, lat in first)
steal = json.load(open(sys.argv[3])).get("steal") is not None
print((wake - t0) / 1e6, (start - t0) / 1e6, (wake - start) / 1e6, int(steal))' \
        "$work/t0" "$work/run$i/samples.bin" "$work/run$i/run.json"
done | awk '
    function sort(a, k,    i, j, t) { for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t } }
    function show(a, k) { sort(a, k); return sprintf("median %.2f ms (min %.2f, max %.2f)", a[int((k + 1) / 2)], a[1], a[k]) }
    { total[NR] = $1; due[NR] = $2; late[NR] = $3; steal += $4 }
    END {
        if (NR == 0) exit 1
        printf "exec to first sample: %s, %d runs\n", show(total, NR), NR
        printf "  exec to first due time (start-up: system snapshot, set-up, 50 ms lead-in): %s;" \
            " steal measured over the run in %d of %d runs\n", show(due, NR), steal, NR
        printf "  first wakeup late by: %s\n", show(late, NR)
    }'
