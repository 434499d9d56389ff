#!/usr/bin/env bash
# Time from exec to the first sample of a 1 ms run, natively, step by step: CLOCK_MONOTONIC is
# read just before execve (python3), and the first sample's wake time is its expected_ns +
# latency_ns in samples.bin (the same clock), read in either format (JLSAMPL2, the default, or
# JLSAMPL1 with `--samples-format 1`; docs/result-format.md). Prints the median and range over
# N runs of
#
#   - exec to the first sample;
#   - exec to the first due time (samples.bin's start_ns): the start-up proper. It holds the
#     system snapshot, the set-up, and the lead-in from fixing the start to the first due time
#     (20 ms and the measuring threads' set-up; 50 ms before issue 44's change). The snapshot
#     once waited 100 ms for a live steal-time sample before the lead-in (start-up about
#     165 ms, ~15 ms of it work); a run now measures steal over itself instead (run.json
#     `steal`, its first reading as the lead-in begins), counted below;
#   - how late the first wakeup was (first sample less first due time);
#   - the process's CPU time over the whole 100 ms run (wait4's rusage: user + system);
#   - with a build that records its start-up timeline (run.json `startup`, issue 44): the
#     process's CPU time when the start gate opened, and each step's end from exec, its own
#     time and its share of exec to the first sample (the last rows: the lead-in's wait from
#     the gate to the first due time, and the first wakeup's lateness).
#
# Usage: ci/startup.sh BINARY [N] [extra run options...]; takes the measuring lock per run.
# With STEPS_OUT=FILE, each run's figures and steps are also appended to FILE as JSON lines;
# `ci/startup.sh --summarize FILE` prints their summary.
set -euo pipefail
# The summary of runs given as JSON lines on stdin (one per run, as written to STEPS_OUT).
summarize='
import json, sys
runs = [json.loads(l) for l in sys.stdin if l.strip()]
if not runs: sys.exit(1)
def show(xs):
    xs = sorted(xs)
    return "median %.2f ms (min %.2f, max %.2f)" % (xs[(len(xs) - 1) // 2] / 1e6, xs[0] / 1e6, xs[-1] / 1e6)
n = len(runs)
print("exec to first sample: %s, %d runs" % (show([r["total"] for r in runs]), n))
print("  exec to first due time (start-up: system snapshot, set-up, lead-in): %s;"
      " steal measured over the run in %d of %d runs" % (show([r["due"] for r in runs]), sum(r["steal"] for r in runs), n))
print("  first wakeup late by: %s" % show([r["late"] for r in runs]))
print("  process CPU over the whole 100 ms run: %s" % show([r["cpu_run"] for r in runs]))
timed = [r for r in runs if r["steps"]]
if not timed:
    print("  (no start-up timeline in run.json: a build before issue 44 step timing)")
    sys.exit(0)
print("  process CPU when the start gate opened: %s" % show([r["cpu_start"] for r in timed]))
# Steps by name, in the order of the first run (a step a run lacks is left out of its medians).
names = [s[0] for s in timed[0]["steps"]]
for r in timed[1:]:
    names += [s[0] for s in r["steps"] if s[0] not in names]
med = lambda xs: sorted(xs)[(len(xs) - 1) // 2]
print("  %-52s %9s %9s %9s %7s" % ("step (median of %d runs)" % len(timed), "end, ms", "own, ms", "max own", "share"))
for name in names:
    rows = [(s, r["total"]) for r in timed for s in r["steps"] if s[0] == name]
    print("  %-52s %9.2f %9.2f %9.2f %6.1f%%" % (name[:52], med([s[1] for s, _ in rows]) / 1e6,
          med([s[2] for s, _ in rows]) / 1e6, max(s[2] for s, _ in rows) / 1e6,
          100 * med([s[2] / t for s, t in rows])))'
if [[ ${1:-} == --summarize ]]; then
    # ci/startup.sh --summarize FILE: the summary of runs kept with STEPS_OUT (bench/startup-pairs.sh).
    python3 -c "$summarize" < "${2:?--summarize FILE}"
    exit
fi
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
pid = os.fork()
if pid == 0:
    with open(sys.argv[1], "w") as f:
        f.write(str(time.clock_gettime_ns(time.CLOCK_MONOTONIC)))
    os.execv(sys.argv[3], sys.argv[3:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[2], "w") as f:
    f.write(str(round((usage.ru_utime + usage.ru_stime) * 1e9)))
sys.exit(os.waitstatus_to_exitcode(status))' "$work/t0" "$work/cpu" "$bin" run --duration 100ms --interval 1ms \
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
record = json.load(open(sys.argv[3]))
steal = record.get("steal") is not None
cpu_run = int(open(sys.argv[4]).read())
startup = record.get("startup")
steps = []
if startup:
    assert startup["first_due_monotonic_ns"] == start, (startup["first_due_monotonic_ns"], start)
    prev = t0
    for s in startup["steps"]:
        steps.append([s["step"], s["end_monotonic_ns"] - t0, s["end_monotonic_ns"] - prev])
        prev = s["end_monotonic_ns"]
    steps.append(["lead-in: gate open to first due time", start - t0, start - prev])
    steps.append(["first wakeup: due time to wake", wake - t0, wake - start])
print(json.dumps({"total": wake - t0, "due": start - t0, "late": wake - start, "steal": steal,
                  "cpu_run": cpu_run, "cpu_start": startup and startup["process_cpu_ns"],
                  "steps": steps}))' \
        "$work/t0" "$work/run$i/samples.bin" "$work/run$i/run.json" "$work/cpu"
done | tee -a "${STEPS_OUT:-/dev/null}" | python3 -c "$summarize"
