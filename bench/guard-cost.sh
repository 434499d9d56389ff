#!/usr/bin/env bash
# What the measuring loop's starvation guard (src/measure/guard.rs, issue 39 N24) costs the hot
# path: interleaved runs of two release builds of the same tree, one as it is and one with the
# guard's check compiled out (`if now >= guard.next_check_ns ...` in src/measure/cycle.rs made
# `if false && ...`: the compare, its branch and the cold call are gone, all else the same),
# each `jitterlab run --interval 100us` on the same CPUs, compared by `jitterlab compare --json`.
# Prints per round and CPU the ratios guarded / unguarded of
#
#   - p50 and mean latency;
#   - CPU time per wakeup of the measuring thread (run.json cpu_time: each thread reads its
#     CLOCK_THREAD_CPUTIME_ID as its last act, over its wakeups);
#
# and their mean and median over every round and CPU, then over the undisturbed rounds (other
# processes used at most 5 % of the CPUs during both runs, common.sh's others_pct).
# Informational: exits 0 unless a build or a run fails. Run as root.
#
# The builds take minutes on a busy machine: make them first, outside the measuring lock, then
# measure holding it:
#
#   BUILD_ONLY=1 bash bench/guard-cost.sh        # prints JITTERLAB=... BASELINE=...
#   JITTERLAB=... BASELINE=... flock /tmp/jitterlab-measuring-tests.lock bash bench/guard-cost.sh
#
# Environment:
#   ROUNDS=5            rounds of one run each, alternating which build goes first
#   SECONDS_PER_RUN=10  length of each run, whole seconds
#   INTERVAL=100us      the runs' --interval
#   CPUS=0-N            CPUs to measure (default: every online CPU)
#   JITTERLAB=path      the guarded binary (default: build target/release/jitterlab)
#   BASELINE=path       the unguarded binary (default: build it from HEAD in a temporary git
#                       worktree, with the check compiled out; uncommitted changes are not in it)
#   BASE_COMMIT=rev     build the baseline from this commit as it is instead (e.g. d0bc7b2^,
#                       the tree before the guard: other changes of the commits between count too)
#   BUILD_ONLY=1        build both, print their paths, measure nothing
#   KEEP=dir            keep the raw results there
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

ROUNDS=${ROUNDS:-5}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
INTERVAL=${INTERVAL:-100us}
CPUS=${CPUS:-$(cat /sys/devices/system/cpu/online)}
need_positive ROUNDS "$ROUNDS"
need_positive SECONDS_PER_RUN "$SECONDS_PER_RUN"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/guard-cost.XXXXXX")
worktree=""
cleanup() {
    [[ -n $worktree ]] && git -C "$root" worktree remove --force "$worktree" >/dev/null 2>&1
    rm -rf "$tmp"
}
trap cleanup EXIT

# The guarded binary: $JITTERLAB, or this tree's release build, copied to its own name (the
# baseline's build below writes target/release/jitterlab too).
guarded_binary() {
    if [[ -n ${JITTERLAB:-} ]]; then
        jitterlab=$(jitterlab_binary)
        return
    fi
    jitterlab=$(jitterlab_binary)
    cp "$jitterlab" "$root/target/release/jitterlab-guarded"
    jitterlab=$root/target/release/jitterlab-guarded
}

# The unguarded binary: $BASELINE, or built in a temporary worktree with the repository's
# target directory (the dependencies are built once for both), copied to its own name.
unguarded_binary() {
    if [[ -n ${BASELINE:-} ]]; then
        baseline=$BASELINE
        return
    fi
    local rev=${BASE_COMMIT:-HEAD}
    worktree=$tmp/baseline-tree
    git -C "$root" worktree add --detach --quiet "$worktree" "$rev" ||
        die "cannot make a worktree of $rev"
    if [[ -z ${BASE_COMMIT:-} ]]; then
        local cycle=$worktree/src/measure/cycle.rs pattern='if now >= guard.next_check_ns'
        [[ $(grep -c "$pattern" "$cycle") == 1 ]] ||
            die "src/measure/cycle.rs no longer has exactly one '$pattern': update this script"
        sed -i "s/$pattern/if false \&\& now >= guard.next_check_ns/" "$cycle"
    fi
    echo "building the unguarded baseline from $rev${BASE_COMMIT:-, the check compiled out} ..." >&2
    (cd "$worktree" && cargo build --release --quiet --bin jitterlab --target-dir "$root/target") ||
        die "the baseline's cargo build --release failed"
    baseline=$root/target/release/jitterlab-unguarded
    cp "$root/target/release/jitterlab" "$baseline"
    git -C "$root" worktree remove --force "$worktree"
    worktree=""
}

guarded_binary
unguarded_binary
[[ -x $baseline ]] || die "baseline binary not found or not executable: $baseline"
if [[ -n ${BUILD_ONLY:-} ]]; then
    echo "JITTERLAB=$jitterlab BASELINE=$baseline"
    exit 0
fi

# run KIND ROUND: one run into $tmp/KIND-ROUND (KIND guarded or unguarded), and its others %.
run() {
    local kind=$1 r=$2 bin
    local dir=$tmp/$kind-$r
    bin=$([[ $kind == guarded ]] && echo "$jitterlab" || echo "$baseline")
    others_start
    "$bin" run --duration "${SECONDS_PER_RUN}s" --interval "$INTERVAL" --cpus "$CPUS" --quiet \
        --out "$dir" >"$dir.log" 2>&1 || { cat "$dir.log" >&2; die "$kind run $r failed"; }
    others_pct >"$dir.others"
}

for ((r = 1; r <= ROUNDS; r++)); do
    if ((r % 2)); then order=(unguarded guarded); else order=(guarded unguarded); fi
    for kind in "${order[@]}"; do
        echo "  round $r/$ROUNDS: $kind ..." >&2
        run "$kind" "$r"
    done
    # ROUND SCOPE FIGURE UNGUARDED GUARDED, then the round's others.
    "$jitterlab" compare --json "$tmp/unguarded-$r" "$tmp/guarded-$r" | flat_compare |
        awk -v r="$r" '$1 ~ /^cpu/ && $2 ~ /^(mean|p50|cpu_time_per_cycle_ns)$/ { print r, $0 }' \
            >>"$tmp/figures"
    echo "$r others $(<"$tmp/unguarded-$r.others") $(<"$tmp/guarded-$r.others")" >>"$tmp/figures"
done
[[ -n ${KEEP:-} ]] && mkdir -p "$KEEP" && cp -r "$tmp"/*-[0-9]* "$tmp/figures" "$KEEP"/

echo
echo "the starvation guard's cost: $ROUNDS interleaved rounds of $SECONDS_PER_RUN s at --interval" \
    "$INTERVAL, CPUs $CPUS; ratio = guarded / unguarded (check compiled out${BASE_COMMIT:+: $BASE_COMMIT})"
echo "(other processes: % of all CPUs during the run, $(others_method); see bench/common.sh)"
pair_ratio_summary "$tmp/figures" unguarded guarded
