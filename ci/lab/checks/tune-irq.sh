# Check 9's verdict (issue 43's ground truth for the interrupt ranking): a network card's
# interrupts pinned to the measured CPU 1 and driven by ping floods from CPU 0 (the guest part,
# tune-irq.guest.sh); `jitterlab tune --fixes irq-affinity,vmstat` on CPU 1. Passes when the
# storm was there (at least 50 of the card's interrupts a second on CPU 1 before the tune, and
# at least 100 in every baseline arm, per the arm's
# counters.log, and not in the irq-affinity arms, which moved them), the tune completed,
# irq-affinity is ranked first, worth applying, with the upper end of p99.9's 95 % interval
# below 1, the null fix vmstat is not worth applying, and the card's pins read 1 again after
# the tune (the tune set its moves back). The guest has a card of its own (LAB_GUEST, boot.sh):
# the other checks' guests boot with no network.
LAB_GUEST[tune-irq]=nic=virtio

# The card's interrupts counted on CPU 1 in the arm directory $1, for the IRQ numbers in $2
# (space separated): the sum of its counters.log's `irq:N=` on CPU 1's lines.
lab_tune_irq_count() {
    awk -v irqs="$2" '
        BEGIN { n = split(irqs, a, " "); for (i = 1; i <= n; i++) want["irq:" a[i]] = 1 }
        /^#/ || $2 != 1 { next }
        { for (i = 5; i <= NF; i++) { split($i, kv, "="); if (kv[1] in want && kv[2] ~ /^[0-9]+$/) s += kv[2] } }
        END { print s + 0 }' "$1/counters.log"
}

# "ratio [low, high] (method)" of statistic $2 of fix $3 in tune.json $1.
lab_tune_irq_figure() {
    jq -r --arg s "$2" --arg f "$3" '.fixes[] | select(.name == $f) | .effect.figures[] | select(.statistic == $s)
        | def r: if type == "number" then . * 1000 | round / 1000 else "unbounded" end;
        "\(.ratio | r) [\(.ratio_low | r), \(.ratio_high | r)] (\(.interval_method))"' "$1"
}

verdict_tune-irq() {
    local dir=$1 json=$1/tune.json problems=() irqs rate arm n base=() moved=() rank verdict high null_verdict
    [[ -s $dir/nic-irqs ]] || { echo "the guest found no network card's interrupts: $(tail -2 "$dir/log")"; return 1; }
    irqs=$(cut -d' ' -f1 "$dir/nic-irqs" | paste -sd' ')
    rate=$(cat "$dir/irq-rate" 2>/dev/null || echo 0)
    [[ $(cat "$dir/tune.exit" 2>/dev/null) == 0 ]] || { echo "tune exited $(cat "$dir/tune.exit" 2>/dev/null): $(tail -2 "$dir/tune.stderr")"; return 1; }
    jq -e . "$json" >/dev/null 2>&1 || { echo "tune --json printed no JSON: $(tail -2 "$dir/tune.stderr")"; return 1; }
    [[ $(jq -r .ended "$json") == completed ]] || problems+=("the tune ended $(jq -r '.ended, .end_reason' "$json" | paste -sd' ')")
    # Under TCG each interrupt and its NET_RX work take the emulated CPU long: at a host load
    # average of 15, 100-130 a second here, enough to lift CPU 1's p99 fourfold.
    ((rate >= 50)) || problems+=("the floods raised only $rate interrupts a second on CPU 1 (want 50)")
    for arm in $(jq -r '.arms[] | select(.treatment == "baseline" and (.dir | startswith("together") | not)) | .dir' "$json"); do
        n=$(lab_tune_irq_count "$dir/tune/$arm" "$irqs")
        base+=("$n")
        ((n >= 100)) || problems+=("baseline arm $arm: $n interrupts of the card on CPU 1 (want 100)")
    done
    for arm in $(jq -r '.arms[] | select(.treatment == "irq-affinity") | .dir' "$json"); do
        n=$(lab_tune_irq_count "$dir/tune/$arm" "$irqs")
        moved+=("$n")
        # The first interrupt after the move may still land on the old CPU.
        ((n <= 5)) || problems+=("irq-affinity arm $arm: $n interrupts of the card on CPU 1 (want at most 5)")
    done
    ((${#base[@]} >= 2 && ${#moved[@]} >= 2)) || problems+=("arms: ${#base[@]} baseline, ${#moved[@]} irq-affinity (want 2 each)")
    rank=$(jq -r '.fixes[] | select(.name == "irq-affinity") | .rank' "$json")
    verdict=$(jq -r '.fixes[] | select(.name == "irq-affinity") | .effect.verdict' "$json")
    high=$(jq -r '.fixes[] | select(.name == "irq-affinity") | .effect.figures[] | select(.statistic == "p99.9") | .ratio_high // "null"' "$json")
    null_verdict=$(jq -r '.fixes[] | select(.name == "vmstat") | .effect.verdict' "$json")
    [[ $rank == 1 ]] || problems+=("irq-affinity ranked $rank, not first")
    [[ $verdict == worthwhile ]] || problems+=("irq-affinity: $verdict, not worthwhile")
    [[ $high != null ]] && awk -v h="$high" 'BEGIN { exit !(h < 1) }' ||
        problems+=("irq-affinity's p99.9 interval reaches $high, not below 1")
    [[ -n $null_verdict && $null_verdict != worthwhile ]] || problems+=("the null fix vmstat: ${null_verdict:-absent}")
    while read -r irq cpus; do
        [[ $cpus == 1 ]] || problems+=("IRQ $irq reads $cpus after the tune, not the pin 1")
    done <"$dir/pins-after"
    local what
    what="CPU 1: $rate card interrupts/s before; per arm baseline ${base[*]}, irq-affinity ${moved[*]};"
    what+=" irq-affinity rank $rank $verdict, p99.9 $(lab_tune_irq_figure "$json" p99.9 irq-affinity), p99 $(lab_tune_irq_figure "$json" p99 irq-affinity), missed deadlines/h $(lab_tune_irq_figure "$json" "missed deadlines /h" irq-affinity);"
    what+=" vmstat $null_verdict, p99.9 $(lab_tune_irq_figure "$json" p99.9 vmstat), missed deadlines/h $(lab_tune_irq_figure "$json" "missed deadlines /h" vmstat);"
    what+=" $(jq -r '"\(.rounds) rounds of \(.arm_duration_ns / 1e9) s"' "$json"), $(($(cat "$dir/tune.end") - $(cat "$dir/tune.start"))) s"
    if ((${#problems[@]})); then
        local IFS=';'
        echo "${problems[*]} ($what)"
        return 1
    fi
    echo "$what"
}
