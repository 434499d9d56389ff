# Check 8's verdict: the guest is aarch64; doctor printed its JSON and says PREEMPT_RT
# (kernel.preemption ok), with the isolation of the RT boot (kernel.isolation ok) and the BPF
# back end usable (tracing.btf, tracing.bpf, and tracing.backend, which loads the programs);
# the traced run with the BPF back end passes check 1's verdict (lab_trace_verdict, trace.sh)
# for its scene (arm64.guest.sh: CPU 1 measured every 5 ms, 50 ms spikes of a FIFO 99 thread on
# CPU 1, at least 5 logged): BPF on a second architecture. The same scene traced by tracefs is
# judged too and its verdict shown, without deciding the check.
verdict_arm64() {
    local dir=$1 id verdict problems=() trace
    [[ $(cat "$dir/machine") == aarch64 ]] || problems+=("the guest is $(cat "$dir/machine"), not aarch64")
    if [[ ! -s $dir/doctor.json ]]; then
        problems+=("doctor printed no JSON (exit $(cat "$dir/doctor.exit")): $(tail -2 "$dir/doctor.stderr" | tr '\n' ' ')")
    else
        for id in kernel.preemption kernel.isolation tracing.btf tracing.bpf tracing.backend; do
            verdict=$(jq -r --arg id "$id" '.checks[] | select(.id == $id) | "\(.verdict): \(.evidence)"' "$dir/doctor.json")
            [[ $verdict == ok:* ]] || problems+=("doctor $id $(cut -c1-200 <<<"${verdict:-missing}")")
        done
        jq -e '.checks[] | select(.id == "kernel.preemption") | .evidence | contains("PREEMPT_RT")' "$dir/doctor.json" >/dev/null ||
            problems+=("doctor's kernel.preemption does not say PREEMPT_RT")
    fi
    if trace=$(lab_trace_verdict "$dir" bpf 99 5 1); then :; else problems+=("run --trace-backend bpf: $trace"); fi
    local tracefs
    tracefs=$(lab_trace_verdict "$dir/tracefs" tracefs 99 5 1) && tracefs="passed: $tracefs" || tracefs="failed: $tracefs"
    if ((${#problems[@]})); then
        local IFS=';'
        echo "${problems[*]}; (tracefs, the same scene: $tracefs)"
        return 1
    fi
    echo "aarch64; doctor: PREEMPT_RT, CPU 1 isolated, BTF and BPF ok; bpf: $trace; (tracefs, the same scene: $tracefs)"
}
