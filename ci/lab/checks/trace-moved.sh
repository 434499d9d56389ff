# The verdict of check 1g (ci/lab/checks/trace-moved.guest.sh): the timers of the nohz_full
# CPU 1 moved to CPU 0 by timer migration (on), followed by both back ends. Each run passes
# check 1's verdict for CPU 1 (every injection logged, at least 5, found, split and blamed on
# jl-spike-1 at FIFO 99), and its samples of CPU 1 unjoined with a timer (run.json
# trace.threads[].samples_unmatched) are at most 1% of them (before the BPF back end followed
# moved timers, such a run left about 40% unjoined; tracefs, which follows them, 0). The line
# says how many wakeups came from CPU 0 (their explanations name the migration) and the counts.
verdict_trace-moved() {
    local dir=$1 kind=$2 backend m v failed=() said=()
    if [[ $(cat "$dir/timer_migration" 2>/dev/null) != 1 ]]; then
        echo "kernel.timer_migration is not 1 in the guest ($(cat "$dir/timer_migration" 2>/dev/null || echo 'unreadable')): nothing moves"
        return 1
    fi
    for backend in tracefs bpf; do
        for m in nanosleep clock-nanosleep; do
            local d=$dir/$backend-$m
            v=$(lab_trace_verdict "$d" "$backend" 99 5 1) || { failed+=("$backend $m: $v"); continue; }
            v=$(jq -r '[.trace.threads[] | select(.cpu == 1)][0] as $t
                | ($t.samples_joined + $t.samples_unmatched + $t.samples_trace_late) as $n
                | if $t == null then "no trace of CPU 1 in run.json"
                  elif $t.samples_unmatched * 100 > $n then "\($t.samples_unmatched) of \($n) samples unjoined (more than 1%)"
                  else "ok \($t.samples_unmatched) of \($n) unjoined" end' "$d/run/run.json" 2>&1)
            [[ $v == ok* ]] || { failed+=("$backend $m: $v"); continue; }
            local moved
            moved=$(jq -rs '[.[] | select(.type == "spike_explained" and .cpu == 1) | select(.verdict | contains("timer migration moved"))] | length' "$d/run/events.jsonl")
            said+=("$backend $m ${v#ok }, $moved late ones moved to CPU 0")
        done
    done
    if ((${#failed[@]})); then
        printf '%s; ' "${failed[@]}"
        echo
        return 1
    fi
    printf '%s; ' "${said[@]}"
    echo
}
