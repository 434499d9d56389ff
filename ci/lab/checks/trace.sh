# Check 1's verdict, for either back end (trace-tracefs, trace-bpf): from the run's
# events.jsonl, every spike injected on CPU 0 is found (a late wakeup due inside it is
# explained), split right (the timer interrupt came on time: the delay is the thread's) and
# blamed on the spike thread, which held the CPU for what remained of the injection. The
# tolerances are the emulator's: TCG runs the guest's clock in steps of the host's scheduling.
lab_trace_verdict() {
    local dir=$1 backend=$2
    [[ -f $dir/run.exit ]] || { echo "the run did not end ($(tail -1 "$dir/log"))"; return 1; }
    if [[ $(cat "$dir/run.exit") != 0 ]]; then
        echo "jitterlab run exited $(cat "$dir/run.exit"): $(grep -v '^$' "$dir/stderr" | tail -3 | tr '\n' ' ')"
        return 1
    fi
    local used
    used=$(jq -r '.trace.backend // empty' "$dir/run/run.json")
    [[ $used == "$backend" ]] || { echo "traced with '$used', not $backend"; return 1; }
    jq -rs --argjson irq_max 2000000 --argjson thread_slack 2000000 '
        [.[] | select(.type == "spike_injection" and .cpu == 0)] as $inj
        | [.[] | select(.type == "spike_explained" and .cpu == 0)] as $x
        | if ($inj | length) < 10 then "only \($inj | length) injections logged (expected 14)"
          else
            [ $inj | to_entries[] | .key as $k | .value as $i
              | ([$x[] | select(.due_ns >= $i.start_ns and .due_ns < $i.end_ns)] | first) as $e
              | ($i.end_ns - ($e.due_ns // 0)) as $remaining
              | if $e == null then "injection \($k): no late wakeup due inside it was explained"
                elif ($e.irq_latency_ns // 1e18) > $irq_max
                  then "injection \($k): IRQ latency \($e.irq_latency_ns) ns, the timer interrupt should have been on time (verdict: \($e.verdict))"
                elif (($e.thread_latency_ns - $remaining) | fabs) > $thread_slack
                  then "injection \($k): thread latency \($e.thread_latency_ns) ns, the injection ended \($remaining) ns after the due time"
                elif $e.contributors[0].name != "jl-spike-0" or $e.contributors[0].kind != "task"
                  then "injection \($k): the culprit named is \($e.contributors[0].kind) \($e.contributors[0].name), not the spike thread jl-spike-0 (verdict: \($e.verdict))"
                elif (($e.contributors[0].duration_ns - $remaining) | fabs) * 5 > $remaining
                  then "injection \($k): jl-spike-0 held the CPU \($e.contributors[0].duration_ns) ns of the remaining \($remaining) ns"
                elif ($e.verdict | startswith("thread latency") | not) or ($e.verdict | contains("jl-spike-0") | not)
                  then "injection \($k): verdict \"\($e.verdict)\""
                else empty end ]
            | if length == 0 then "ok \($inj | length) injections, each explained and blamed on jl-spike-0"
              else first end
          end' "$dir/run/events.jsonl" >"$dir/verdict" 2>&1 ||
        { echo "cannot read the run's events: $(cat "$dir/verdict")"; return 1; }
    local v
    v=$(cat "$dir/verdict")
    echo "${v#ok }"
    [[ $v == ok* ]]
}
verdict_trace-tracefs() { lab_trace_verdict "$1" tracefs; }
verdict_trace-bpf() { lab_trace_verdict "$1" bpf; }
