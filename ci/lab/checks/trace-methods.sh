# The verdicts of checks 1c (below) and 1d (above), traced by tracefs, and 1e and 1f, the same
# traced by BPF (ci/lab/checks/trace-methods.lib): every timer wake method on the isolated CPU
# 1, timer migration off, the spike below the measuring thread (FIFO 50) and above it (FIFO 99).
# - Above: as check 1 (lab_trace_verdict): every injection found, split, blamed on the spike.
# - Below, on PREEMPT_RT, the methods whose timer expires in ktimers/1 (LAB_SOFT_TIMERS): the
#   same, with the spike at FIFO 50, and every verdict a thread-side delay that names the
#   spike and ktimers/1, never "no trace event".
# - Below, every other method, and every method on the standard kernel (its timers all expire
#   in hard interrupt context): the spike delays nothing: it is never blamed for more than
#   10 ms of a wakeup (half an injection; the emulator stretches a preemption by milliseconds), and fewer than half the injections end with a wakeup late by 15 ms or
#   more (the emulator's own stalls can make a few).
LAB_SOFT_TIMERS="itimer itimer-periodic posix-timer timerfd"
LAB_TIMER_METHODS="clock-nanosleep clock-nanosleep-rel nanosleep select poll itimer itimer-periodic posix-timer timerfd"

# The spike below delays nothing.
# lab_trace_undelayed DIR BACKEND
lab_trace_undelayed() {
    local dir=$1 backend=$2 used
    [[ -f $dir/run.exit && $(cat "$dir/run.exit") == 0 ]] ||
        { echo "jitterlab run exited $(cat "$dir/run.exit" 2>/dev/null || echo '(no exit)'): $(grep -v '^$' "$dir/stderr" 2>/dev/null | tail -2 | tr '\n' ' ')"; return 1; }
    used=$(jq -r '.trace.backend // empty' "$dir/run/run.json")
    [[ $used == "$backend" ]] || { echo "traced with '$used', not $backend"; return 1; }
    # A wakeup the spike is blamed for more than 10 ms of counts against it when that time
    # lies in one of its injections beyond what the emulator stretched that injection: the
    # spike's own clock gives its spin's length (end - start), 20 ms asked, and what it ran
    # past that the vCPU was stopped while it spun. Outside its injections the spike thread
    # spins not at all (it wakes every 100 ms for a few us, and ends at SCHED_OTHER): shown
    # holding a FIFO 95 thread's CPU there, it held it only while the vCPU was stopped (lab
    # 2026-11-30: `OTHER 0 for 14.49 ms` after its last injection; `FIFO 50 for 16.49 ms`
    # 70 ms before its first). Such wakeups are said, not judged.
    jq -rs --argjson len 20000000 '
        [.[] | select(.type == "spike_injection" and .cpu == 1)] as $inj
        | [.[] | select(.type == "spike_explained" and .cpu == 1)] as $x
        | [$x[] | . as $e
            | ([$e.contributors[]? | select(.name == "jl-spike-1")] | map(.duration_ns) | add // 0) as $held
            | select($held > 10000000)
            | ([$inj[] | select(.start_ns <= $e.due_ns + $e.latency_ns and .end_ns >= $e.due_ns)
                | (.end_ns - .start_ns - $len)] | max) as $stretch
            | {verdict: $e.verdict, held: $held, stretch: $stretch}] as $shown
        | ([$shown[] | select(.stretch != null and .held > 10000000 + ([.stretch, 0] | max))] | first) as $blamed
        | [$shown[] | select(.stretch == null)] as $outside
        | [$shown[] | select(.stretch != null and .held <= 10000000 + ([.stretch, 0] | max))] as $stretched
        | ([$inj[] | . as $i | select(any($x[]; .due_ns <= $i.end_ns and .due_ns + .latency_ns >= $i.end_ns and .latency_ns >= 15000000))] | length) as $late
        | (if ($outside | length) + ($stretched | length) > 0 then
             "; the spike shown holding the CPU, not judged: \($outside | length) outside its injections, \($stretched | length) within what the vCPU stretched an injection (the spike below cannot hold a FIFO 95 thread: the vCPU stopped while it ran)"
           else "" end) as $note
        | if ($inj | length) < 5 then "only \($inj | length) injections logged (expected at least 5)"
          elif $blamed != null then "jl-spike-1 (below the measuring thread) blamed: \($blamed.verdict)"
          elif $late * 2 >= ($inj | length) then "\($late) of \($inj | length) injections ended with a wakeup late by 15 ms or more"
          else "ok \($inj | length) injections, none delayed a wakeup (\($late) late by 15 ms or more, as the emulator stalls)\($note)" end
        ' "$dir/run/events.jsonl" 2>&1
}

# The ktimers verdicts: every explanation of a wakeup the spike delayed says thread latency,
# names the spike and ktimers/1, and has no "no trace event" first. But for one: a wakeup
# whose timer interrupt came late while nothing ran yet, the vCPU stopped before the
# injection began (its IRQ part, no trace event, ends before the spike's spin starts: the
# spike's own timer was late by as much), and whose spike time all lies in its thread part.
# Its verdict names the larger part, the IRQ one: the emulator's stall, then the spike's
# thread-side delay (lab 2026-11-30, `posix-timer`: `IRQ latency 30.78 ms ... no trace event
# for 30.61 ms`, the injection starting 18.3 ms after its due time, then jl-spike-1 23.99 ms
# of the 24.54 ms thread part). Such a wakeup is said, not failed.
lab_trace_ktimers() {
    local dir=$1
    jq -rs '
        [.[] | select(.type == "spike_injection" and .cpu == 1)] as $inj
        | [.[] | select(.type == "spike_explained" and .cpu == 1)
             | select(any(.contributors[]?; .name == "jl-spike-1" and .duration_ns > 5000000))] as $x
        | [$x[] | . as $e
             | select((.verdict | startswith("thread latency") | not) or (.verdict | contains("ktimers/1") | not)
                      or .contributors[0].name == "no trace event")
             | ([$e.contributors[] | select(.name == "jl-spike-1") | .duration_ns] | add) as $spike
             | (.due_ns + (.irq_latency_ns // 0)) as $irq_end
             | .stalled_first = ((.irq_latency_ns != null) and ($spike <= (.thread_latency_ns // 0) + 1000000)
                 and any($inj[]; .start_ns >= $irq_end - 1000000 and .start_ns <= $e.due_ns + $e.latency_ns))] as $odd
        | ([$odd[] | select(.stalled_first | not)] | first) as $bad
        | ([$odd[] | select(.stalled_first)] | length) as $stalled
        | if ($x | length) == 0 then "no wakeup delayed by the spike was explained"
          elif $bad != null then "a wakeup delayed by the spike is explained as \"\($bad.verdict)\""
          else "ok \($x | length) wakeups delayed by the spike, each a thread-side delay through ktimers/1\(if $stalled > 0 then " (\($stalled) after a stall of the vCPU before the injection began: its IRQ part, no trace event, ends before the spike starts to spin, and all of the spike time is in the thread part)" else "" end)" end
        ' "$dir/run/events.jsonl" 2>&1
}

# On PREEMPT_RT, jitterlab's own threads (every thread of the process but the measuring
# thread jl-measure-1 and the spike load's jl-spike-1, pinned to CPU 1) may run on CPU 0 only,
# and ran there (measure/sched.rs own_threads_placement: the CPUs neither measured nor
# isolated). The guest part listed them every 0.5 s of the run (`threads`: comm, allowed, last
# CPU; a thread gone between the listing and its read leaves empty fields, skipped), and the
# measuring thread must be among them (the measuring part was seen).
# lab_trace_placement DIR
lab_trace_placement() {
    local dir=$1 bad
    grep -q '^jl-measure-1 ' "$dir/threads" 2>/dev/null ||
        { echo "no listing of the run's threads while it measured"; return 1; }
    bad=$(awk 'NF == 3 && $1 !~ /^jl-(measure|spike)-1$/ && ($2 != "0" || $3 != "0")' "$dir/threads" | sort -u | tr '\n' ',')
    [[ -z $bad ]] || { echo "own threads not on CPU 0 alone (comm allowed last): ${bad%,}"; return 1; }
    echo "ok $(awk 'NF == 3 {print $1}' "$dir/threads" | sort -u | tr '\n' ' ')"
}

# lab_trace_methods_verdict DIR KIND SCENE BACKEND: the scene's runs of every method, traced
# by BACKEND, with timer migration off (the guest part set it: trace-methods.lib).
lab_trace_methods_verdict() {
    local dir=$1 kind=$2 scene=$3 backend=$4 m v failed=()
    if [[ ! -f $dir/timer_migration || $(cat "$dir/timer_migration") != *"-> 0" ]]; then
        echo "kernel.timer_migration was not set to 0 in the guest ($(cat "$dir/timer_migration" 2>/dev/null || echo 'no record'))"
        return 1
    fi
    for m in $LAB_TIMER_METHODS; do
        if [[ $kind == rt ]]; then
            v=$(lab_trace_placement "$dir/$scene-$m") || failed+=("$m: $v")
        fi
        if [[ $scene == above ]]; then
            v=$(lab_trace_verdict "$dir/above-$m" "$backend" 99 5 1) || failed+=("$m: $v")
        elif [[ $kind == rt && " $LAB_SOFT_TIMERS " == *" $m "* ]]; then
            if v=$(lab_trace_verdict "$dir/below-$m" "$backend" 50 5 1); then
                v=$(lab_trace_ktimers "$dir/below-$m")
                [[ $v == ok* ]] || failed+=("$m: $v")
            else
                failed+=("$m: $v")
            fi
        else
            v=$(lab_trace_undelayed "$dir/below-$m" "$backend")
            [[ $v == ok* ]] || failed+=("$m: $v")
        fi
    done
    if ((${#failed[@]})); then
        printf '%s; ' "${failed[@]}"
        echo
        return 1
    fi
    local own=
    [[ $kind == rt ]] && own="; jitterlab's own threads on CPU 0 alone"
    case $scene.$kind in
        above.*) echo "9 methods ($backend): every injection found, split and blamed on jl-spike-1 (FIFO 99)$own" ;;
        below.rt) echo "9 methods ($backend): $LAB_SOFT_TIMERS delayed through ktimers/1, each a thread-side delay blamed on jl-spike-1 (FIFO 50); the others undelayed$own" ;;
        *) echo "9 methods ($backend): none delayed by the spike below (every timer expires in hard interrupt context)" ;;
    esac
}
verdict_trace-below() { lab_trace_methods_verdict "$1" "$2" below tracefs; }
verdict_trace-above() { lab_trace_methods_verdict "$1" "$2" above tracefs; }
verdict_trace-below-bpf() { lab_trace_methods_verdict "$1" "$2" below bpf; }
verdict_trace-above-bpf() { lab_trace_methods_verdict "$1" "$2" above bpf; }
