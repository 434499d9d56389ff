# Check 1's verdict, for either back end (trace-tracefs, trace-bpf): from the run's
# events.jsonl, every spike injected on CPU 0 is found (the wakeup its end released is
# explained), split right (the spike's time is in the thread part: on PREEMPT_RT the timer of
# clock_nanosleep expires in hard interrupt context and preempts the FIFO 99 spike) and blamed
# on the spike thread (FIFO 99), named first among the tasks (never after an IRQ thread,
# ktimers or ksoftirqd) for no more than it ran of that wakeup (20% and 2 ms of tolerance;
# interrupts that preempted it are theirs).
# The tolerances are the emulator's: under TCG the guest's time includes the host's
# scheduling of its vCPU threads (docs/lab.md), so an injection may start late, or a timer
# interrupt come late, by milliseconds that no trace event can explain.
#
# lab_trace_verdict DIR BACKEND [PRIO [MIN [CPU]]]: DIR holds run.exit, stderr and run/; the
# spike (jl-spike-CPU) ran at FIFO PRIO (99) on CPU (0); at least MIN injections (10) must be
# logged.
lab_trace_verdict() {
    local dir=$1 backend=$2 prio=${3:-99} min=${4:-10} cpu=${5:-0}
    [[ -f $dir/run.exit ]] || { echo "the run did not end ($(tail -1 "$dir/log"))"; return 1; }
    if [[ $(cat "$dir/run.exit") != 0 ]]; then
        echo "jitterlab run exited $(cat "$dir/run.exit"): $(grep -v '^$' "$dir/stderr" | tail -3 | tr '\n' ' ')"
        return 1
    fi
    local used
    used=$(jq -r '.trace.backend // empty' "$dir/run/run.json")
    [[ $used == "$backend" ]] || { echo "traced with '$used', not $backend"; return 1; }
    # The measuring thread's samples on CPU ([the earlier of its sleep's start and its due
    # time, its wakeup] in ns, from samples.bin through the host's copy of the build): an
    # injection whose end no sample spans was not measured. The thread was not waiting for a
    # wakeup then: its starvation guard had given its CPU up to
    # jitterlab's own threads (run.json's warning "gave its CPU up"), which under TCG on a
    # loaded host happens for hundreds of ms when every CPU is measured; the due times that
    # passed count as missed periods, and the first sample after has no sleep start.
    # In a file, read with --slurpfile: a run's samples are far more than an argument holds.
    local sleeps_file bin=${LAB_BIN[amd64]:-}
    sleeps_file=$(mktemp)
    echo null >"$sleeps_file"
    if [[ -n $bin && -x $bin ]]; then
        "$bin" export --format csv "$dir/run" 2>/dev/null |
            awk -F, -v cpu="$cpu" 'NR > 1 && $1 == cpu && $9 != "" { from = ($8 != "" && $8 < $3) ? $8 : $3; printf "%s[%s,%s]", (n++ ? "," : "["), from, $9 } END { print (n ? "]" : "null") }' >"$sleeps_file"
    fi
    jq -rs --argjson slack 2000000 --argjson prio "$prio" --argjson min "$min" \
        --argjson cpu "$cpu" --arg name "jl-spike-$cpu" --slurpfile sleeps_in "$sleeps_file" '
        ($sleeps_in[0]) as $sleeps
        | [.[] | select(.type == "spike_injection" and .cpu == $cpu)] as $all
        | [$all[] | . as $i | select($sleeps == null or any($sleeps[]; .[0] <= $i.end_ns and .[1] >= $i.end_ns))] as $inj
        | (($all | length) - ($inj | length)) as $unmeasured
        | (if $unmeasured > 0 then "; \($unmeasured) of \($all | length) not measured (no sample of the measuring thread spans its end: the starvation guard had given its CPU up)" else "" end) as $note
        | [.[] | select(.type == "spike_explained" and .cpu == $cpu)] as $x
        | if ($inj | length) < $min then "only \($inj | length) injections logged and measured (expected at least \($min))\($note)"
          else
            [ $inj | to_entries[] | .key as $k | .value as $i
              # The wakeup the end of the injection released: due before the end, woken after.
              | ([$x[] | select(.due_ns <= $i.end_ns and .due_ns + .latency_ns + $slack >= $i.end_ns)] | first) as $e
              | ([$e.contributors[]? | select(.kind == "task" and .name == $name)] | first) as $spike
              # What the spike can have held of that wakeup: from the later of its own wakeup
              # (due_ns: it runs from its switch-in, before the clock read it logs as start_ns)
              # and the timer interrupt (which preempts it: hard expiry), to its end.
              | ([$i.due_ns, ($e.due_ns // 0) + ($e.irq_latency_ns // 0)] | max) as $from
              | ($i.end_ns - $from) as $held
              # From the end of the spike (its own clock) to the wakeup: after its end the spike drops to
              # SCHED_OTHER and the woken measuring thread takes the CPU at once, so a spike
              # the trace still shows on the CPU then, with nothing else, was stalled with its
              # vCPU by the host (TCG): said, and left out of the "no more than it ran" test.
              | (if $e == null then 0 else $e.due_ns + $e.latency_ns - $i.end_ns end) as $after
              | ($spike != null and $spike.duration_ns > $held * 1.2 + $slack
                 and $after > $slack and $spike.duration_ns - $held <= $after + $slack) as $stalled
              # The softirq thread the timer expires in, boosted by priority inheritance on the
              # behalf of the thread (the verdict says so), is the path of the expiry, not a culprit.
              | ([$e.contributors[]? | select(.kind == "task")
                  | select(. as $c | (($c.name | startswith("ktimers/")) and ($e.verdict | contains("\($c.name) (pid \($c.pid))") and contains("by priority inheritance"))) | not)]
                 | first) as $top_task
              | ($e != null and ($e.verdict | test("^latency [^:]+: the thread armed its timer [^ ]+ [^ ]+ late"))) as $armed_late
              | if $e == null then "injection \($k): no late wakeup around its end was explained"
                elif $spike == null then "injection \($k): \($name) is not among the contributors (verdict: \($e.verdict))"
                elif ($spike.policy != "FIFO" or $spike.prio != $prio) then "injection \($k): \($name) shown as \($spike.policy) \($spike.prio), not FIFO \($prio)"
                elif $spike.duration_ns > $held * 1.2 + $slack and ($stalled | not)
                  then "injection \($k): \($name) held the CPU \($spike.duration_ns) ns, more than the \($held) ns it ran of the wakeup"
                # A sleep armed late (the spike preempted the thread between its clock read
                # and its arming: `itimer`, `select` ... above it): the time of the spike lies
                # before the arming, in neither part, and the verdict says so.
                elif (($e.thread_latency_ns == null or $e.thread_latency_ns + $slack < $spike.duration_ns)
                      and (($armed_late and $e.latency_ns - ($e.irq_latency_ns // 0) - ($e.thread_latency_ns // 0) + $slack >= $spike.duration_ns) | not))
                  then "injection \($k): the split puts the spike in the IRQ part (IRQ \($e.irq_latency_ns) ns, thread \($e.thread_latency_ns) ns, spike \($spike.duration_ns) ns)"
                elif $top_task.name != $name
                  then "injection \($k): the task named first is \($top_task.name), not \($name) (verdict: \($e.verdict))"
                elif ($e.contributors[0].name == $name) and ((($e.verdict | startswith("thread latency")) or $armed_late | not) or ($e.verdict | contains($name) | not))
                  then "injection \($k): \($name) held the CPU longest but the verdict is \"\($e.verdict)\""
                elif $stalled then {stalled: $k, ms: ($after / 1e6 * 10 | round / 10)}
                else empty end ]
            | [.[] | objects] as $stalls
            | [.[] | strings] as $bad
            | (if ($stalls | length) > 0 then "; \($stalls | length) shown on the CPU past its own end until the wakeup (injection \([$stalls[] | "\(.stalled): \(.ms) ms"] | join(", ")): the vCPU stalled, not judged for its length)" else "" end) as $stall_note
            | if ($bad | length) > 0 then $bad[0]
              elif ($inj | length) - ($stalls | length) < $min then "only \(($inj | length) - ($stalls | length)) injections judged in full (expected at least \($min))\($stall_note)\($note)"
              else
                "ok \($inj | length) injections, each found, split (the spike in the thread part) and blamed on \($name); the verdict names it in \([$inj[] | . as $i | $x[] | select(.due_ns <= $i.end_ns and .due_ns + .latency_ns + $slack >= $i.end_ns) | select(.verdict | contains($name))] | length)\($stall_note)\($note)"
              end
          end' "$dir/run/events.jsonl" >"$dir/verdict" 2>&1 ||
        { echo "cannot read the run's events: $(cat "$dir/verdict")"; rm -f "$sleeps_file"; return 1; }
    rm -f "$sleeps_file"
    local v
    v=$(cat "$dir/verdict")
    echo "${v#ok }"
    [[ $v == ok* ]]
}
verdict_trace-tracefs() { lab_trace_verdict "$1" tracefs; }
verdict_trace-bpf() { lab_trace_verdict "$1" bpf; }
