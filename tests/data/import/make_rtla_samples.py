#!/usr/bin/env python3
"""Writes rtla timerlat hist samples in the output format rtla prints (tools/tracing/rtla,
timerlat_hist.c; example in Documentation/tools/rtla/rtla-timerlat-hist.rst): rtla cannot run
on the development VM (no timerlat tracer), so the import tests read these. Deterministic."""
import random

def sample(path, user, cpus, n, seed, with_over):
    rnd = random.Random(seed)
    kinds = ["IRQ", "Thr"] + (["Usr"] if user else [])
    entries = 256
    cols = []
    for cpu in cpus:
        for k in kinds:
            base = {"IRQ": 1, "Thr": 4, "Usr": 6}[k]
            vals = [int(base + rnd.expovariate(1 / (2 + 2 * cpu))) for _ in range(n)]
            if with_over and k != "IRQ":
                vals[rnd.randrange(n)] = 1400 + cpu  # beyond the 256 entries: "over"
            cols.append(vals)
    hist = [[0] * (entries + 1) for _ in cols]
    for c, vals in enumerate(cols):
        for v in vals:
            hist[c][min(v, entries)] += 1
    out = ["# RTLA timerlat histogram", "# Time unit is microseconds (us)", "# Duration:   0 00:01:40"]
    out.append("Index" + "".join(f"   {k}-{cpu:03d}" for cpu in cpus for k in kinds))
    for b in range(entries):
        if sum(h[b] for h in hist) == 0:
            continue
        out.append(f"{b:<6d}" + "".join(f"{h[b]:9d} " for h in hist))
    out.append("over: " + "".join(f"{h[entries]:9d} " for h in hist))
    out.append("count:" + "".join(f"{len(v):9d} " for v in cols))
    out.append("min:  " + "".join(f"{min(v):9d} " for v in cols))
    out.append("avg:  " + "".join(f"{sum(v) // len(v):9d} " for v in cols))
    out.append("max:  " + "".join(f"{max(v):9d} " for v in cols))
    out.append("ALL:  " + "".join({"IRQ": "      IRQ", "Thr": "       Thr", "Usr": "       Usr"}[k] for k in kinds))
    per_kind = {k: [v for i, v in enumerate(cols) if kinds[i % len(kinds)] == k] for k in kinds}
    out.append("count:" + "".join(f"{sum(len(v) for v in per_kind[k]):9d} " for k in kinds))
    out.append("min:  " + "".join(f"{min(min(v) for v in per_kind[k]):9d} " for k in kinds))
    out.append("avg:  " + "".join(f"{sum(sum(v) for v in per_kind[k]) // sum(len(v) for v in per_kind[k]):9d} " for k in kinds))
    out.append("max:  " + "".join(f"{max(max(v) for v in per_kind[k]):9d} " for k in kinds))
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")

sample("rtla-timerlat-hist.txt", False, [0, 1], 100000, 1, False)
sample("rtla-timerlat-hist-user.txt", True, [0, 1], 50000, 2, True)
