#!/usr/bin/env python3
"""Writes a jitterdebugger results.json (format version 3) in the layout jitterdebugger's
dump_stats() prints (jitterdebugger.c): per thread the non-empty buckets of its 1000-entry
histogram (1 us resolution), count, min, max and avg (%.2f). jitterdebugger is not packaged
for Debian, so the import tests read this. Deterministic: thread 1 has two latencies beyond
the histogram's 1 ms (counted, in no bucket); thread 2 never ran (count 0, avg -nan)."""
import random

rnd = random.Random(13)
threads = [
    [int(3 + rnd.expovariate(1 / 4)) for _ in range(20000)],
    [int(5 + rnd.expovariate(1 / 6)) for _ in range(20000)] + [1500, 2750],
    [],
]
out = ["{", '  "version": 3,', '  "sysinfo": {', '    "sysname": "Linux",',
       '    "nodename": "board",', '    "release": "6.6.0-rt15",',
       '    "version": "#1 SMP PREEMPT_RT",', '    "machine": "aarch64",',
       '    "cpus_online": 3,', '    "resolution_in_ns": 1000', "  },", '  "cpu": {']
for i, vals in enumerate(threads):
    hist = [0] * 1000
    for v in vals:
        if v < 1000:
            hist[v] += 1
    out.append(f'    "{i}": {{')
    rows = [f'        "{j}": {c}' for j, c in enumerate(hist) if c]
    out.append('      "histogram": {' + ("\n" + ",\n".join(rows) + "\n" if rows else "") + "      },")
    out.append(f'      "count": {len(vals)},')
    # An empty thread keeps jitterdebugger's initial min (UINT64_MAX) and max (0).
    out.append(f'      "min": {min(vals) if vals else 2**64 - 1},')
    out.append(f'      "max": {max(vals) if vals else 0},')
    out.append(f'      "avg": {sum(vals) / len(vals):.2f}' if vals else '      "avg": -nan')
    out.append("    }" + ("," if i < len(threads) - 1 else ""))
out += ["  }", "}"]
with open("jitterdebugger-results.json", "w") as f:
    f.write("\n".join(out) + "\n")
