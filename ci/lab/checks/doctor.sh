# Check 5's verdict: the checks that a PREEMPT_RT kernel booted with isolcpus= nohz_full=
# rcu_nocbs= irqaffinity= settles (the preemption model, the isolation of the measured CPU,
# the interrupts' default affinity) pass on the RT boot; on the standard kernel, booted
# without them, the same checks fail, each with its fix.
LAB_DOCTOR_SETTLED=(kernel.preemption kernel.isolation irq.affinity)
verdict_doctor() {
    local dir=$1 kind=$2 id verdict fix problems=()
    [[ -s $dir/doctor.json ]] || { echo "doctor printed no JSON (exit $(cat "$dir/doctor.exit" 2>/dev/null)): $(tail -2 "$dir/doctor.stderr" 2>/dev/null)"; return 1; }
    for id in "${LAB_DOCTOR_SETTLED[@]}"; do
        verdict=$(jq -r --arg id "$id" '.checks[] | select(.id == $id) | .verdict' "$dir/doctor.json")
        fix=$(jq -r --arg id "$id" '.checks[] | select(.id == $id) | .fix' "$dir/doctor.json")
        if [[ -z $verdict ]]; then
            problems+=("$id missing")
        elif [[ $kind == rt && $verdict != ok ]]; then
            problems+=("$id: $verdict ($(jq -r --arg id "$id" '.checks[] | select(.id == $id) | .evidence' "$dir/doctor.json"))")
        elif [[ $kind == standard && ($verdict == ok || -z $fix) ]]; then
            problems+=("$id: $verdict without a fix on the standard kernel")
        fi
    done
    if [[ $kind == rt ]] && ! jq -e '.checks[] | select(.id == "kernel.preemption") | .evidence | contains("PREEMPT_RT")' "$dir/doctor.json" >/dev/null; then
        problems+=("kernel.preemption does not say PREEMPT_RT")
    fi
    if ((${#problems[@]})); then
        local IFS=';'
        echo "${problems[*]}"
        return 1
    fi
    [[ $kind == rt ]] && echo "${LAB_DOCTOR_SETTLED[*]} pass" ||
        echo "${LAB_DOCTOR_SETTLED[*]} fail with their fixes"
}
