# Check 6: the seeds' experiment on two real kernels. Each kernel's run (seeds.guest.sh) is
# judged alone (verdict_seeds): it completed, its three phases hold wakeups of CPU 1, and its
# run.json names the kernel it ran on (PREEMPT_RT on the RT one, not on the standard one).
# Then both together (across_seeds, once both kernels have passed): `compare` of the pair,
# whose per-CPU min, mean, p99 and max equal each run's own run.json figures, `compare --phase
# hackbench` of the pair, and `report` of the pair, which names both kernels. Under TCG the
# latencies are the emulator's: which kernel is faster is not judged, only that the whole
# path works on two real kernels.
LAB_SEEDS_PHASES='["idle","hackbench","memory"]'

verdict_seeds() {
    local dir=$1 kind=$2 run=$1/run
    if [[ $(cat "$dir/run.exit" 2>/dev/null) != 0 ]]; then
        echo "jitterlab run exited $(cat "$dir/run.exit" 2>/dev/null): $(grep -v '^$' "$dir/stderr" | tail -3 | tr '\n' ' ')"
        return 1
    fi
    jq -r --argjson phases "$LAB_SEEDS_PHASES" --arg kind "$kind" --arg release "$(cat "$dir/uname-r")" '
        [.phases[]? | .label] as $labels
        | [.phases[]? | [.threads[]? | select(.cpu == 1) | .samples][0] // 0] as $counts
        | (.system.kernel_release // "") as $rel
        | (.system.kernel_version // "") as $ver
        | if .ended != "completed" then "the run ended \(.ended): \(.end_reason)"
          elif $labels != $phases then "its phases are \($labels), not \($phases)"
          elif ($counts | min) < 1000 then "a phase of CPU 1 holds fewer than 1000 of its 6000 wakeups: \($counts)"
          elif $rel != $release then "run.json names kernel \($rel), the guest ran \($release)"
          elif ($kind == "rt") != ($rel | test("-rt-")) then "run.json kernel \($rel) on the \($kind) kernel"
          else "ok \($rel): wakeups per phase \($counts | map(tostring) | join(", ")), max \(.threads[0].max_ns / 1000 | floor) us"
          end' "$run/run.json" | { read -r line; echo "${line#ok }"; [[ $line == ok* ]]; }
}

# across_seeds DIR_RT DIR_STANDARD: the pair, with the host's copy of the binary (LAB_BIN).
across_seeds() {
    local rt=$1/run std=$2/run out=$LAB_WORK/seeds-pair bin=${LAB_BIN[amd64]}
    mkdir -p "$out"
    "$bin" compare "$std" "$rt" --json >"$out/compare.json" 2>"$out/compare.err" ||
        { echo "compare exited $?: $(tail -2 "$out/compare.err" | tr '\n' ' ')"; return 1; }
    local k bad=()
    for k in 0 1; do
        local r=$([[ $k == 0 ]] && echo "$std" || echo "$rt")
        bad+=($(jq -r --slurpfile run "$r/run.json" --argjson k "$k" '
            ($run[0].threads[] | select(.cpu == 1)) as $t
            | (.scopes[] | select(.scope == "cpu1") | .rows) as $rows
            | [["min", $t.min_ns], ["mean", $t.mean_ns], ["p99", $t.p99_ns], ["max", $t.max_ns]][]
            | . as [$stat, $own]
            | ($rows[] | select(.statistic == $stat) | .values[$k]) as $cmp
            | select($cmp != $own)
            | "run\($k)-\($stat):compare=\($cmp),run.json=\($own)"' "$out/compare.json"))
    done
    ((${#bad[@]} == 0)) || { echo "compare's figures differ from the runs' own: ${bad[*]}"; return 1; }
    "$bin" compare "$std" "$rt" --phase hackbench --json >"$out/phase.json" 2>"$out/phase.err" ||
        { echo "compare --phase hackbench exited $?: $(tail -2 "$out/phase.err" | tr '\n' ' ')"; return 1; }
    "$bin" report "$std" "$rt" -o "$out/report.html" >/dev/null 2>"$out/report.err" ||
        { echo "report exited $?: $(tail -2 "$out/report.err" | tr '\n' ' ')"; return 1; }
    local rel
    for rel in "$(cat "$2/uname-r")" "$(cat "$1/uname-r")"; do
        grep -qF "$rel" "$out/report.html" || { echo "the report does not name kernel $rel"; return 1; }
    done
    local ratio
    ratio=$(jq -r '.scopes[] | select(.scope == "cpu1") | .rows[] | select(.statistic == "p99")
        | "p99 \(.values[0] / 1000 | floor) us standard, \(.values[1] / 1000 | floor) us rt"' "$out/compare.json")
    echo "compare's min, mean, p99, max of CPU 1 equal both runs' own; compare --phase hackbench and report of the pair ($ratio, the emulator's); the report names both kernels"
}
