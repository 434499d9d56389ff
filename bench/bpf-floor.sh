#!/usr/bin/env bash
# The floor of the BPF back end's cost: what attaching its programs costs before they do any
# work. Builds a second jitterlab whose embedded BPF object is built with -DJL_FLOOR=1 (every
# program returns at once; bpf/trace.bpf.c, "programs") or, with FLOOR_LEVEL=2, -DJL_FLOOR=2
# (every program reads the clock once and returns), then runs interleaved rounds of
#
#   plain:  jitterlab run                              (the release binary)
#   bpf:    jitterlab run --trace --trace-backend bpf  (the release binary)
#   floor:  jitterlab run --trace --trace-backend bpf  (the floor binary: the same tracepoints,
#           empty programs; the trace it reads is empty, its explanations are none)
#
# the order rotating from round to round, and prints per CPU and round the ratios to the plain
# run of the mean latency and of the measuring threads' CPU time per wakeup (as
# trace-backend.sh), and their medians (with the sign test's confidence interval of each median,
# bench/common.sh) and means over the rounds. bpf / plain less floor / plain
# is what the programs' work costs; floor / plain what the kernel's calls into them cost. A round
# where other processes used more than 5 % of the CPUs during any of its runs is marked DISTURBED
# and left out of the medians. Informational: exits 0 unless a build or a run fails. Run as
# root, holding the measuring lock:
#
#   flock /tmp/jitterlab-measuring-tests.lock bash bench/bpf-floor.sh
#
# Environment:
#   FLOOR_LEVEL=1       1: empty programs; 2: programs that only read the clock
#   ROUNDS=8            rounds of three runs
#   SECONDS_PER_RUN=10  length of each run, whole seconds
#   CPUS=0-N            CPUs to measure (default: every online CPU)
#   JITTERLAB=path      binary of the plain and bpf runs (default: build target/release/jitterlab)
#   FLOOR_TARGET=dir    cargo's target directory for the floor binary (default:
#                       target/bpf-floor-LEVEL; kept, so that a second run rebuilds only
#                       jitterlab, and its release/jitterlab can be given to bpf-program-cost.sh)
#   JITTERLAB_ARGS=...  extra options for every run
#   KEEP=dir            keep the raw results there
# Needs what bpf/build.sh needs (clang-14, libbpf-dev) and cargo.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

FLOOR_LEVEL=${FLOOR_LEVEL:-1}
[[ $FLOOR_LEVEL == 1 || $FLOOR_LEVEL == 2 ]] || die "FLOOR_LEVEL must be 1 or 2, not '$FLOOR_LEVEL'"
ROUNDS=${ROUNDS:-8}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
CPUS=${CPUS:-$(cat /sys/devices/system/cpu/online)}
need_positive ROUNDS "$ROUNDS"
need_positive SECONDS_PER_RUN "$SECONDS_PER_RUN"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jitterlab=$(jitterlab_binary)
read -ra extra <<<"${JITTERLAB_ARGS:-}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bpf-floor.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The floor binary: a copy of this tree (as it is, uncommitted changes included) with the
# floor object in place of bpf/trace.bpf.o.
echo "building the floor binary (-DJL_FLOOR=$FLOOR_LEVEL) ..." >&2
tree=$tmp/tree
mkdir "$tree"
(cd "$root" && tar --exclude=./target --exclude=./.git -cf - .) | tar -xf - -C "$tree"
JL_BPF_CFLAGS=-DJL_FLOOR=$FLOOR_LEVEL "$tree/bpf/build.sh" "$tree/bpf/trace.bpf.o" ||
    die "bpf/build.sh -DJL_FLOOR=$FLOOR_LEVEL failed"
target=${FLOOR_TARGET:-$root/target/bpf-floor-$FLOOR_LEVEL}
(cd "$tree" && CARGO_TARGET_DIR=$target cargo build --release --quiet --bin jitterlab) ||
    die "building the floor binary failed"
floor_bin=$target/release/jitterlab
floor=$tmp/jitterlab-floor
cp "$floor_bin" "$floor"

# run KIND ROUND: one run into $tmp/KIND-ROUND; KIND plain, bpf or floor.
run() {
    case $1 in
    plain) measured_run "$jitterlab" "$tmp/$1-$2" "$1 run $2" ;;
    bpf) measured_run "$jitterlab" "$tmp/$1-$2" "$1 run $2" --trace --trace-backend bpf ;;
    floor) measured_run "$floor" "$tmp/$1-$2" "$1 run $2" --trace --trace-backend bpf ;;
    esac
}

rotating_rounds "$ROUNDS" run plain bpf floor
for ((r = 1; r <= ROUNDS; r++)); do
    for kind in bpf floor; do
        # ROUND KIND OTHERS SCOPE FIGURE PLAIN TRACED
        others="$(<"$tmp/plain-$r.others") $(<"$tmp/$kind-$r.others")"
        "$jitterlab" compare --json "$tmp/plain-$r" "$tmp/$kind-$r" | flat_compare |
            awk -v r="$r" -v k="$kind" -v o="$others" \
                '$1 ~ /^cpu/ && $2 ~ /^(mean|cpu_time_per_cycle_ns)$/ { print r, k, o, $0 }' >>"$tmp/figures"
    done
done
[[ -n ${KEEP:-} ]] && mkdir -p "$KEEP" && cp -r "$tmp"/* "$KEEP"/

echo
what=("" "empty programs" "programs that only read the clock")
echo "jitterlab run --trace (bpf) and the same with ${what[FLOOR_LEVEL]} (floor, $floor_bin) vs without, $ROUNDS" \
    "interleaved rounds of $SECONDS_PER_RUN s, CPUs $CPUS${JITTERLAB_ARGS:+, extra options: $JITTERLAB_ARGS}"
echo "(ratio = traced / untraced; other processes: % of all CPUs during the run, $(others_method))"
awk "$AWK_MEDIAN_CI"'
    function add(set, v) { n[set]++; sum[set] += v; val[set, n[set]] = v }
    {
        r = $1; k = $2; calm = $3 <= 5 && $4 <= 5; scope = $5; fig = $6 == "mean" ? "mean latency" : "measuring-thread CPU per wakeup"
        printf "round %d %-5s %s: %s %.2f us -> %.2f us (%.3fx)%s\n", r, k, scope, fig, $7 / 1e3, $8 / 1e3,
            $8 / $7, calm ? "" : " DISTURBED (others " $3 " / " $4 " %)"
        if (calm) add(k SUBSEP fig, $8 / $7)
        figs[fig] = 1; ks[k] = 1
    }
    END {
        print ""
        for (k in ks) for (fig in figs) {
            set = k SUBSEP fig
            if (!n[set]) { printf "%-5s %s: every round disturbed\n", k, fig; continue }
            m = n[set]; split("", a); for (i = 1; i <= m; i++) a[i] = val[set, i]
            sort_values(a, m)
            ci = median_ci(a, m) ? sprintf(", %.0f %% interval of the median %.3f-%.3fx", CI_LEVEL, CI_LO, CI_HI) : ", too few ratios for an interval"
            printf "%-5s %s: median %.3fx%s, mean %.3fx (%d undisturbed ratios)\n", k, fig,
                median_sorted(a, m), ci, sum[set] / m, m
        }
    }' "$tmp/figures"
