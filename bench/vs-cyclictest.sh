#!/usr/bin/env bash
# jitterlab vs rt-tests' cyclictest, same settings, interleaved.
#
# Both tools: one thread per CPU, pinned, SCHED_FIFO 95, mlockall, absolute
# clock_nanosleep on CLOCK_MONOTONIC, 1 ms period, no distance between threads,
# /dev/cpu_dma_latency held at 0. Runs PAIRS pairs, alternating which tool goes
# first (A B, B A, A B, ...), SECONDS_PER_RUN seconds each.
#
# Prints per CPU the ratio jitterlab/cyclictest of mean latency, p99 latency and
# CPU time per cycle of the measuring threads (sum_exec_runtime from
# /proc/PID/task/TID/schedstat read just before the thread exits, divided by the
# thread's number of wakeups), for every pair and the mean over the pairs,
# against the targets of issue 2. Informational: exits 0 unless a run failed.
#
# Environment:
#   PAIRS=3             number of jitterlab/cyclictest pairs (at least 1)
#   SECONDS_PER_RUN=10  length of each run, whole seconds
#   CPUS=0-N            CPUs to measure (default: every online CPU)
#   JITTERLAB=path      jitterlab binary to use (default: build target/release/jitterlab)
#   CYCLICTEST=path     cyclictest binary (default: from PATH)
#   JITTERLAB_ARGS=...  extra options for `jitterlab run` (e.g. "--ring-size 1024")
#   KEEP=dir            copy the raw results (run.json, cyclictest json, schedstat polls) there
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")

PAIRS=${PAIRS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
INTERVAL_US=1000
PRIO=95
CPUS=${CPUS:-$(cat /sys/devices/system/cpu/online)}

die() { echo "vs-cyclictest: $*" >&2; exit 1; }

[[ $PAIRS =~ ^[1-9][0-9]*$ ]] || die "PAIRS must be a positive integer, got '$PAIRS'"
[[ $SECONDS_PER_RUN =~ ^[1-9][0-9]*$ ]] ||
    die "SECONDS_PER_RUN must be a positive whole number of seconds, got '$SECONDS_PER_RUN'"

cyclictest=${CYCLICTEST:-$(command -v cyclictest || true)}
if [[ -z $cyclictest || ! -x $cyclictest ]]; then
    echo "skipped: cyclictest not found; apt-get install rt-tests"
    exit 0
fi
command -v python3 >/dev/null || die "python3 is needed to parse the results"

if [[ -n ${JITTERLAB:-} ]]; then
    jitterlab=$JITTERLAB
else
    echo "building jitterlab (cargo build --release) ..." >&2
    (cd "$root" && cargo build --release --quiet) || die "cargo build --release failed"
    jitterlab=$root/target/release/jitterlab
fi
[[ -x $jitterlab ]] || die "jitterlab binary not found or not executable: $jitterlab"

read -ra jl_extra <<<"${JITTERLAB_ARGS:-}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/vs-cyclictest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The number of CPUs in the list = the number of cyclictest threads.
nthreads=$(python3 - "$CPUS" <<'EOF'
import sys
n = 0
for part in sys.argv[1].split(","):
    lo, _, hi = part.partition("-")
    n += int(hi or lo) - int(lo) + 1
print(n)
EOF
) || die "cannot parse CPUS='$CPUS' (expected a list like 0-3,6)"

# Poller: samples the measuring threads' schedstat while a tool runs; every
# 0.5 s, then every 10 ms in the last 1.5 s so the last reading is taken just
# before each thread exits. Writes, per thread, its CPU and the first reading
# taken 1 s or more into the run and the last one ([seconds, run_ns, pcount]).
cat >"$tmp/poll.py" <<'EOF'
import json, os, sys, time

pid, tool, out, dur = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
base = f"/proc/{pid}/task"
seen = {}
tool_ticks = 0


def read(path):
    with open(path) as f:
        return f.read()


def cpu_ticks():
    """(busy, steal) clock ticks of all CPUs from /proc/stat."""
    f = [int(x) for x in read("/proc/stat").split("\n", 1)[0].split()[1:]]
    # user nice system idle iowait irq softirq steal ...
    return f[0] + f[1] + f[2] + f[5] + f[6], f[7]


t0 = time.monotonic()
ticks0 = cpu_ticks()

while True:
    now = time.monotonic() - t0
    try:
        tids = os.listdir(base)
        stat = read(f"/proc/{pid}/stat")
    except OSError:
        break
    # utime + stime of the whole tool process (fields 14 and 15)
    tool_ticks = sum(int(x) for x in stat.rsplit(")", 1)[1].split()[11:13])
    alive = 0
    for tid in tids:
        d = f"{base}/{tid}"
        try:
            comm = read(d + "/comm").strip()
            sched = read(d + "/schedstat").split()
            status = read(d + "/status")
        except OSError:
            continue
        if tool == "jitterlab":
            if not comm.startswith("jl-measure-"):
                continue
            cpu = int(comm.rsplit("-", 1)[1])
        else:
            # cyclictest: every thread but the main one measures; each pins
            # itself to one CPU.
            allowed = [l.split(":", 1)[1].strip() for l in status.splitlines()
                       if l.startswith("Cpus_allowed_list:")]
            if int(tid) == pid or not allowed or not allowed[0].isdigit():
                continue
            cpu = int(allowed[0])
        alive += 1
        rec = seen.setdefault(tid, {"tid": int(tid), "cpu": cpu, "first": None})
        rec["cpu"] = cpu
        reading = [now, int(sched[0]), int(sched[2])]
        if rec["first"] is None and now >= 1.0:
            rec["first"] = reading
        rec["last"] = reading
    if (seen and alive == 0) or now > dur + 60:
        break
    time.sleep(0.01 if now > dur - 1.5 else 0.5)

# What else ran during the measurement: CPU time of everything but the tool and
# this poller, and time stolen by the hypervisor, as % of all CPUs' time.
wall = time.monotonic() - t0
ticks1 = cpu_ticks()
hz = os.sysconf("SC_CLK_TCK")
ncpu = os.cpu_count() or 1
own = os.times()
own_ticks = (own.user + own.system) * hz
total = wall * hz * ncpu
others = max(0.0, ticks1[0] - ticks0[0] - tool_ticks - own_ticks)
system = {"wall_s": wall, "others_pct": 100 * others / total,
          "steal_pct": 100 * (ticks1[1] - ticks0[1]) / total}
with open(out, "w") as f:
    json.dump({"threads": list(seen.values()), "system": system}, f)
EOF

# run_tool TOOL RUN_INDEX: one measured run with its schedstat poller.
run_tool() {
    local tool=$1 i=$2 pid poller rc=0
    local log=$tmp/$tool-$i.log
    case $tool in
    jitterlab)
        "$jitterlab" run --duration "${SECONDS_PER_RUN}s" --interval "${INTERVAL_US}us" \
            --distance 0ns --cpus "$CPUS" --policy fifo --priority "$PRIO" \
            --wake clock-nanosleep --clock monotonic --pm-qos 0 \
            --quiet --json --out "$tmp/jitterlab-$i.dir" ${jl_extra[@]+"${jl_extra[@]}"} \
            >"$tmp/jitterlab-$i.json" 2>"$log" &
        ;;
    cyclictest)
        # Histogram of 1 us buckets up to 1 ms (the interval; longer wakeups
        # are counted as overflow) for p99. Not --nsecs: its histogram would
        # have 1 ns buckets, and the increment into that 8 MB array misses the
        # cache on every wakeup (perf: ~3 % of the thread's time), which would
        # inflate cyclictest's CPU time per cycle. In us, cyclictest truncates
        # each sample to a whole us; the analysis adds 0.5 us (bucket middle).
        "$cyclictest" --mlockall --affinity="$CPUS" --threads="$nthreads" \
            --policy=fifo --priority="$PRIO" --interval="$INTERVAL_US" --distance=0 \
            --clock=0 --latency=0 --duration="$SECONDS_PER_RUN" --quiet \
            --histogram=1000 --histfile=/dev/null \
            --json="$tmp/cyclictest-$i.json" >"$log" 2>&1 &
        ;;
    esac
    pid=$!
    python3 "$tmp/poll.py" "$pid" "$tool" "$tmp/$tool-$i.sched.json" "$SECONDS_PER_RUN" &
    poller=$!
    wait "$pid" || rc=$?
    wait "$poller" || die "schedstat poller failed during $tool run $i"
    if ((rc != 0)); then
        cat "$log" >&2
        die "$tool run $i failed with exit status $rc"
    fi
}

echo "jitterlab vs cyclictest: $PAIRS pairs x ${SECONDS_PER_RUN} s, CPUs $CPUS," \
    "SCHED_FIFO $PRIO, ${INTERVAL_US} us interval, absolute clock_nanosleep" >&2
echo "  jitterlab:  $("$jitterlab" --version 2>/dev/null || echo "$jitterlab")" >&2
echo "  cyclictest: $("$cyclictest" --help 2>&1 | head -n1 || true)" >&2
for ((p = 1; p <= PAIRS; p++)); do
    if ((p % 2 == 1)); then order=(jitterlab cyclictest); else order=(cyclictest jitterlab); fi
    for tool in "${order[@]}"; do
        echo "  pair $p/$PAIRS: $tool ..." >&2
        run_tool "$tool" "$p"
    done
done

if [[ -n ${KEEP:-} ]]; then
    mkdir -p "$KEEP"
    cp "$tmp"/*.json "$tmp"/*.log "$KEEP"/
fi

python3 - "$tmp" "$PAIRS" "$CPUS" "$SECONDS_PER_RUN" <<'EOF'
import json, sys
from statistics import mean

tmp, pairs, cpus_arg, secs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]


def load(path):
    with open(path) as f:
        return json.load(f)


def sched_by_cpu(path):
    d = load(path)
    return {r["cpu"]: r for r in d["threads"]}, d["system"]


def cpu_cost(rec, cycles):
    """ns on CPU per cycle over the thread's life, and over its steady state
    (readings from 1 s into the run to the last, per time slice)."""
    if rec is None or not cycles:
        return None, None
    whole = rec["last"][1] / cycles
    steady = None
    f, l = rec.get("first"), rec["last"]
    if f and l[2] > f[2]:
        steady = (l[1] - f[1]) / (l[2] - f[2])
    return whole, steady


def p99_from_hist(hist, cycles):
    """p99 of cyclictest's 1 us histogram, in ns, at the middle of its bucket
    (samples are truncated to whole us); None when it falls in the overflow."""
    need = 0.99 * cycles
    acc = 0
    for v in sorted(int(k) for k in hist):
        acc += hist[str(v)]
        if acc >= need:
            return v * 1000 + 500
    return None


runs = []  # per pair: {cpu: {"jl": {...}, "ct": {...}}}
problems = []
for p in range(1, pairs + 1):
    res = {}
    jl = load(f"{tmp}/jitterlab-{p}.json")
    jls, jsys = sched_by_cpu(f"{tmp}/jitterlab-{p}.sched.json")
    for t in jl["threads"]:
        whole, steady = cpu_cost(jls.get(t["cpu"]), t["samples"])
        res.setdefault(t["cpu"], {})["jl"] = {
            "mean": t["mean_ns"], "p99": t["p99_ns"], "cyc": t["samples"],
            "cpu": whole, "steady": steady,
            "missed": t.get("missed_periods", 0), "sys": jsys}
    ct = load(f"{tmp}/cyclictest-{p}.json")
    cts, csys = sched_by_cpu(f"{tmp}/cyclictest-{p}.sched.json")
    for t in ct["thread"].values():
        whole, steady = cpu_cost(cts.get(t["cpu"]), t["cycles"])
        over = t["cycles"] - sum(t["histogram"].values())
        res.setdefault(t["cpu"], {})["ct"] = {
            # avg is in us of truncated samples: + 0.5 us for the truncation
            "mean": t["avg"] * 1000 + 500, "p99": p99_from_hist(t["histogram"], t["cycles"]),
            "cyc": t["cycles"], "cpu": whole, "steady": steady, "overflow": over,
            "sys": csys}
    for cpu, r in res.items():
        for k in ("jl", "ct"):
            if k not in r:
                problems.append(f"pair {p}: no {k} thread on CPU {cpu}")
            elif r[k]["cpu"] is None:
                problems.append(f"pair {p}: no schedstat reading for {k} on CPU {cpu}")
    runs.append(res)


def us(ns):
    return "n/a" if ns is None else f"{ns / 1000:.2f} us"


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def rs(x):
    return "n/a" if x is None else f"{x:.3f}x"


def avg(xs):
    xs = [x for x in xs if x is not None]
    return mean(xs) if xs else None


print()
print(f"jitterlab / cyclictest, {pairs} interleaved pairs of {secs} s runs, CPUs {cpus_arg},"
      f" SCHED_FIFO 95, 1 ms absolute clock_nanosleep")
print("(latency in us; CPU time per cycle = time on CPU of the measuring thread (schedstat, read"
      " just before it exits) / its wakeups; steady state = from 1 s into the run, per time slice;"
      " other CPU use = % of all CPUs' time used by other processes during the run, a sign of"
      " disturbance; cyclictest's latencies are whole us, +0.5 us for its truncation;"
      " ratio < 1 means jitterlab is lower)")
cpus = sorted({c for r in runs for c in r})
targets = []
for cpu in cpus:
    print()
    print(f"CPU {cpu}")
    hdr = (f"  {'run':<8} {'metric':<19} {'jitterlab':>12} {'cyclictest':>12} {'ratio':>9}")
    print(hdr)
    rows = {"mean": [], "p99": [], "cpu": [], "steady": []}
    for p, res in enumerate(runs, 1):
        r = res.get(cpu, {})
        a, b = r.get("jl"), r.get("ct")
        if not a or not b:
            continue
        first = "jitterlab first" if p % 2 == 1 else "cyclictest first"
        for key, label in (("mean", "mean latency"), ("p99", "p99 latency"),
                           ("cpu", "CPU time per cycle"), ("steady", "  steady state")):
            x = ratio(a[key], b[key])
            rows[key].append(x)
            name = f"pair {p}" if key == "mean" else ""
            print(f"  {name:<8} {label:<19} {us(a[key]):>12} {us(b[key]):>12} {rs(x):>9}")
        extra = []
        if a["missed"]:
            extra.append(f"jitterlab missed {a['missed']} periods")
        if b["overflow"]:
            extra.append(f"cyclictest {b['overflow']} samples over 1 ms")
        print(f"  {'':<8} {'wakeups':<19} {a['cyc']:>12} {b['cyc']:>12}   ({first}"
              + (", " + ", ".join(extra) if extra else "") + ")")
        print(f"  {'':<8} {'other CPU use':<19} {a['sys']['others_pct']:>10.1f} %"
              f" {b['sys']['others_pct']:>10.1f} %   (steal {a['sys']['steal_pct']:.1f} % /"
              f" {b['sys']['steal_pct']:.1f} %)")
    means = {k: avg(v) for k, v in rows.items()}
    print(f"  {'mean of ' + str(len(rows['mean'])) + ' pairs':<28}"
          f" mean latency {rs(means['mean'])}, p99 latency {rs(means['p99'])},"
          f" CPU time per cycle {rs(means['cpu'])} (steady state {rs(means['steady'])})")
    targets.append((cpu, means))

disturbed = sorted({p for p, res in enumerate(runs, 1) for r in res.values()
                    for k in ("jl", "ct") if k in r and r[k]["sys"]["others_pct"] > 5.0})
if disturbed:
    print()
    print("note: other processes used more than 5 % of the CPUs during pair(s) "
          + ", ".join(map(str, disturbed)) + "; those figures are disturbed, rerun on a quiet machine")
print()
print("targets (issue 2), on the mean of the pairs:")
for cpu, m in targets:
    c, l = m["cpu"], m["mean"]
    cv = "n/a" if c is None else ("PASS" if c <= 1.0 else "MISS")
    lv = "n/a" if l is None else ("PASS" if 0.9 <= l <= 1.1 else "MISS")
    print(f"  CPU {cpu}: CPU time per cycle ratio {rs(c)} (target <= 1.000x) {cv};"
          f" mean latency ratio {rs(l)} (target 0.900x-1.100x) {lv}")
if problems:
    print()
    for msg in problems:
        print("problem:", msg)
    sys.exit(1)
EOF
