#!/usr/bin/env python3
"""Writes an rteval summary.xml in the layout rteval's report has (rteval/rteval_text.xsl,
rteval/modules/measurement/cyclictest.py: RunData.reduce and MakeReport): /rteval/run_info,
SystemInfo/uname, Measurements/cyclictest with a system and a core element per CPU, each with
statistics (us) and its non-empty histogram buckets. rteval is not installed on the development
VM, so the import tests read this. Deterministic, from known random latencies; the statistics
are computed as rteval computes them from the same buckets."""
import math
import random

rnd = random.Random(31)
cpus = [0, 1]
lat = {c: [int(2 + rnd.expovariate(1 / (3 + 2 * c))) for _ in range(5000)] + [180 + c] for c in cpus}


def stats(vals):
    hist = {}
    for v in vals:
        hist[v] = hist.get(v, 0) + 1
    n = len(vals)
    mean = sum(vals) / n
    mode = max(sorted(hist), key=lambda k: hist[k])
    s = sorted(vals)
    median = s[n // 2] if n % 2 else s[n // 2]
    mad = sum(abs(v - mean) for v in vals) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1))
    lines = ["<statistics>", f"<samples>{n}</samples>"]
    for tag, v in [("minimum", min(vals)), ("maximum", max(vals)), ("median", median),
                   ("mode", mode), ("range", max(vals) - min(vals)), ("mean", mean),
                   ("mean_absolute_deviation", mad), ("standard_deviation", sd)]:
        lines.append(f'<{tag} unit="us">{v}</{tag}>')
    lines.append("</statistics>")
    lines.append(f'<histogram nbuckets="{len(hist)}">')
    lines += [f'<bucket index="{k}" value="{hist[k]}"/>' for k in sorted(hist)]
    lines.append("</histogram>")
    return lines


out = ['<?xml version="1.0"?>', '<rteval version="3.9" parsed_by="rteval">',
       '<run_info days="0" hours="0" minutes="10" seconds="0">',
       "<date>2026-11-20</date>", "<time>09:15:02</time>", "</run_info>",
       "<SystemInfo>", "<uname>", "<node>rt-board</node>",
       '<kernel is_RT="1">6.12.0-rt7</kernel>', "<arch>x86_64</arch>",
       "<baseos>Fedora 41</baseos>", "</uname>", "</SystemInfo>",
       '<loads load_average="3.2" loads="2" loadcpus="2-3"/>',
       '<Measurements measurecpus="0,1">',
       '<cyclictest command_line="cyclictest -i100 -qmu -h 3500 -p95 -t2 -a0,1">',
       "<timestamps><runloop_start>2026-11-20 09:15:04</runloop_start>"
       "<runloop_stop>2026-11-20 09:25:04</runloop_stop></timestamps>",
       '<system description="(2 cores) Intel(R) Xeon(R)">']
out += stats(lat[0] + lat[1])
out.append("</system>")
for c in cpus:
    out.append(f'<core id="{c}" priority="95">')
    out += stats(lat[c])
    out.append("</core>")
out += ["</cyclictest>", "</Measurements>", "</rteval>"]
with open("rteval-summary.xml", "w") as f:
    f.write("\n".join(out) + "\n")
