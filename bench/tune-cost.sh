#!/usr/bin/env bash
# tune-cost.sh: what a `jitterlab tune` costs for the confidence it gives. For each number of
# rounds and each arm length asked for, one tune of the fixes in FIXES (default vmstat: a fix
# that changes nothing measurable on an idle machine, so its intervals show the noise alone);
# prints, per tune, its arms, its wall time, the time per arm beyond the arm's length (start
# and stop), and per fix the width of the 95 % interval of the p99, p99.9 and missed-deadline
# rate ratios (ratio_high - ratio_low: 0.2 means a fix must change the figure by about 10 % to
# be told from the noise), the interval's method and the fix's verdict (a null fix's should be
# no-measurable-effect: any other is a false verdict); and what else ran meanwhile: the load average at the
# tune's start and the other processes' share of all CPUs during it (steal included: common.sh
# `others_pct`). The wall time of a tune of N fixes is then rounds x (N + 1) x (length +
# overhead), and the width depends on rounds x length.
#
# Each tune holds the measuring lock (LOCK, default /tmp/jitterlab-measuring-tests.lock, as the
# measuring tests and the lab take it) while it runs, and only then: the wall time does not
# count the wait for it. Do not run the script itself under `flock LOCK` (it would wait for
# itself); LOCK= (empty) takes no lock.
#
#   bash bench/tune-cost.sh                      # vmstat, rounds 2, 4 and 8, arms of 5 s and 10 s
#   ROUNDS="2 4" DURATIONS="2s 5s" FIXES=vmstat,timer-migration CPUS=1 bash bench/tune-cost.sh
#   JITTERLAB=target/debug/jitterlab KEEP=/tmp/tc bash bench/tune-cost.sh
#
# Root (the fixes write /proc/sys). Bash and awk only.
set -euo pipefail
source "$(dirname "$0")/common.sh"

ROUNDS=${ROUNDS:-2 4 8}
DURATIONS=${DURATIONS:-5s 10s}
LOCK=${LOCK-/tmp/jitterlab-measuring-tests.lock}
FIXES=${FIXES:-vmstat}
CPUS=${CPUS:-1}
for r in $ROUNDS; do
    need_positive ROUNDS "$r"
    ((r >= 2)) || die "ROUNDS must each be at least 2, got $r"
done
[[ $FIXES =~ ^[a-z,-]+$ ]] || die "FIXES must be fix names separated by commas, got '$FIXES'"
bin=$(jitterlab_binary)
work=${KEEP:-$(mktemp -d)}
mkdir -p "$work"
[[ -n ${KEEP:-} ]] || trap 'rm -rf "$work"' EXIT
nfix=$(awk -F, '{print NF}' <<<"$FIXES")

# figures FILE: one line per fix and statistic of tune.json: `fix statistic low high method`
# (the rate of missed deadlines as `rate`: `missed deadlines /h`, `over deadline /h` in the
# files of earlier tunes), and one per fix: `fix verdict - - VERDICT`.
figures() {
    awk '
        /^  "fixes": \[/ { infixes = 1 }
        /^  "together"|^  "deploy"/ { infixes = 0 }
        !infixes { next }
        /^      "name": / { gsub(/[",]/, "", $2); fix = $2 }
        /"statistic": / { stat = $0; sub(/.*"statistic": "/, "", stat); sub(/".*/, "", stat) }
        /"ratio_low": / { low = $2; sub(/,$/, "", low) }
        /"ratio_high": / { high = $2; sub(/,$/, "", high) }
        /"interval_method": / {
            m = $2; gsub(/[",]/, "", m)
            if (stat == "missed deadlines /h" || stat == "over deadline /h") stat = "rate"
            if (stat == "p99" || stat == "p99.9" || stat == "rate") print fix, stat, low, high, m
        }
        /^        "verdict": / { v = $2; gsub(/[",]/, "", v); print fix, "verdict", "-", "-", v }
    ' "$1"
}

printf '%-6s %-8s %-6s %-5s %-9s %-12s %-6s %-8s %-14s %-32s %-32s %-36s %s\n' fixes rounds length arms wall_s overhead_s load others% fix "p99 width (method)" "p99.9 width (method)" "missed/h width (method)" verdict
for rounds in $ROUNDS; do
    for d in $DURATIONS; do
        dsec=$(awk -v d="$d" 'BEGIN { v = d + 0; if (d ~ /ms$/) v /= 1000; else if (d ~ /m$/) v *= 60; print v }')
        out="$work/tune-r$rounds-$d"
        rm -rf "$out"
        if [[ -n $LOCK ]]; then
            exec {lockfd}>>"$LOCK"
            flock "$lockfd"
        fi
        load=$(cut -d' ' -f1 /proc/loadavg)
        others_start
        start=$EPOCHREALTIME
        rc=0
        "$bin" tune --fixes "$FIXES" --rounds "$rounds" -D "$d" --cpus "$CPUS" --quiet --json \
            --out "$out" >"$out.json" 2>"$out.err" || rc=$?
        end=$EPOCHREALTIME
        others=$(others_pct)
        [[ -n $LOCK ]] && exec {lockfd}>&-
        ((rc == 0)) || die "tune failed (exit $rc): $(tail -3 "$out.err")"
        arms=$(grep -c '"treatment"' "$out.json" || true)
        wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
        over=$(awk -v w="$wall" -v n="$arms" -v d="$dsec" 'BEGIN { printf "%.2f", w / n - d }')
        figures "$out.json" | awk -v n="$nfix" -v r="$rounds" -v d="$d" -v a="$arms" -v w="$wall" -v o="$over" -v l="$load" -v p="$others" '
            function width(l, h) { return (l == "null" || h == "null") ? "unbounded" : sprintf("%.3f", h - l) }
            $2 == "verdict" { v_[$1] = $5; next }
            { key = $1; w_[key, $2] = width($3, $4) " (" $5 ")"; if (!(key in seen)) { seen[key] = 1; order[++k] = key } }
            END {
                for (i = 1; i <= k; i++)
                    printf "%-6s %-8s %-6s %-5s %-9s %-12s %-6s %-8s %-14s %-32s %-32s %-36s %s\n", n, r, d, a, w, o, l, p, order[i], w_[order[i], "p99"], w_[order[i], "p99.9"], w_[order[i], "rate"], v_[order[i]]
            }'
    done
done
