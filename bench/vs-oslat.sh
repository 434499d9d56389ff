#!/bin/sh
# jitterlab noise against rt-tests' oslat on the same CPUs, same duration and policy,
# interleaved (PAIRS pairs), under the measuring lock; prints per pair and the median ratios
# jitterlab / oslat of the largest gap, the noise share (gaps >= 1 us, oslat's smallest bucket)
# (oslat: from its 1 us buckets, -b 1024, so gaps above 1 ms count as 1 ms: under load it is
# understated) and the loop iterations per second (jitterlab's loop must be at least as tight: >= 0.95).
#
# Usage: bench/vs-oslat.sh [JITTERLAB] (or env JITTERLAB); env CPUS (default 1), DURATION (s, default 10),
# PAIRS (default 3), PRIO (FIFO priority of both; default: none, SCHED_OTHER as oslat's default),
# CLOCK (jitterlab noise --clock: auto, the default, reads the TSC where the kernel trusts it,
# as oslat does; monotonic reads the vDSO clock).
set -eu
# The dev profile is optimised too: target/debug/jitterlab. Each command takes the measuring
# lock itself: do not run this script under `flock` of the same lock (it would wait forever).
JL=${1:-${JITTERLAB:-target/release/jitterlab}}
CPUS=${CPUS:-1}
DURATION=${DURATION:-10}
PAIRS=${PAIRS:-3}
PRIO=${PRIO:-}
CLOCK=${CLOCK:-auto}
LOCK=/tmp/jitterlab-measuring-tests.lock
command -v oslat >/dev/null || { echo "oslat not found (apt-get install rt-tests)" >&2; exit 3; }
[ -x "$JL" ] || { echo "$JL not found (cargo build --release)" >&2; exit 3; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -n "$PRIO" ]; then
  jl_policy="--policy fifo --priority $PRIO"; os_policy="-f $PRIO"
else
  jl_policy=""; os_policy=""
fi

i=1
while [ "$i" -le "$PAIRS" ]; do
  # jitterlab: threshold 1 us, as oslat's first bucket.
  flock "$LOCK" "$JL" noise --cpus "$CPUS" --duration "${DURATION}s" $jl_policy --threshold 1us --clock "$CLOCK" \
    --quiet --json --out "$work/jl-$i" >"$work/jl-$i.json" 2>/dev/null
  flock "$LOCK" oslat -c "$CPUS" -D "$DURATION" $os_policy -b 1024 -q --json="$work/os-$i.json" >/dev/null 2>&1
  python3 - "$work/jl-$i.json" "$work/os-$i.json" "$DURATION" <<'PY' >>"$work/pairs.txt"
import json, sys
jl = json.load(open(sys.argv[1]))
os_ = json.load(open(sys.argv[2]))
duration = float(sys.argv[3])
t = jl["threads"][0]
n = t["noise"]
jl_max_us = t["max_ns"] / 1e3 if t["max_ns"] is not None else 0.0
jl_share = n["noise_pct"]
jl_iter_s = n["iterations"] / (n["measured_ns"] / 1e9)
th = next(iter(os_["thread"].values()))
hist = {int(k): v for k, v in th["histogram"].items()}
os_max_us = float(th["max"])
# oslat counts every iteration in 1 us buckets (bucket 1: up to 1 us); gaps above 1 us are buckets 2+, each taken at its bucket value.
os_noise_us = sum(k * v for k, v in hist.items() if k >= 2)
os_share = 100.0 * os_noise_us / (duration * 1e6)
os_iter_s = sum(hist.values()) / duration
print(jl_max_us / os_max_us if os_max_us else float("nan"),
      jl_share / os_share if os_share else float("nan"),
      jl_iter_s / os_iter_s if os_iter_s else float("nan"),
      jl_max_us, os_max_us, jl_share, os_share, jl_iter_s, os_iter_s, n.get("clock", {}).get("source", "?"))
PY
  i=$((i + 1))
done
python3 - "$work/pairs.txt" <<'PY'
import statistics, sys
lines = [l.split() for l in open(sys.argv[1])]
rows = [list(map(float, l[:9])) for l in lines]
print("jitterlab's loop clock:", ", ".join(sorted(set(l[9] for l in lines))))
print("pair  max gap jl/oslat   noise share jl/oslat   iterations/s jl/oslat")
for k, r in enumerate(rows, 1):
    print(f"{k:>4}  {r[0]:6.2f} ({r[3]:.1f}/{r[4]:.1f} us)   {r[1]:6.2f} ({r[5]:.4f}/{r[6]:.4f} %)   {r[2]:6.3f} ({r[7]:.3g}/{r[8]:.3g})")
med = lambda i: statistics.median(r[i] for r in rows)
print(f"median ratios: max gap {med(0):.2f}, noise share {med(1):.2f}, iterations/s {med(2):.3f}")
PY
