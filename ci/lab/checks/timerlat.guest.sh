# Check 2: `jitterlab timerlat hist` beside the real `rtla timerlat hist` on CPU 1 (isolated on
# the RT kernel), interleaved: rtla, jitterlab, rtla, jitterlab, 10 s each at rtla's defaults
# (1 ms period, FIFO 95, buckets of 1 us). jitterlab must measure with the kernel's timerlat
# tracer (its stderr says so). The global osnoise options and the tracing instances are listed
# before and after each jitterlab run: what it changed is set back.
t=/sys/kernel/tracing
cat $t/available_tracers >available_tracers
ls $t/events/osnoise >osnoise-events 2>&1
state() {
    for f in cpus timerlat_period_us stop_tracing_us stop_tracing_total_us print_stack; do
        printf '%s %s\n' "$f" "$(cat $t/osnoise/$f 2>&1)"
    done
    printf 'instances %s\n' "$(ls $t/instances | tr '\n' ' ')"
    printf 'journals %s\n' "$(ls /run/jitterlab-root 2>/dev/null | grep -c osnoise-options)"
}
# One second of the tracer's own text on both CPUs, for the parser's fixture (tests/data/timerlat).
mkdir $t/instances/lab-capture
echo timerlat >$t/instances/lab-capture/current_tracer
sleep 1
echo 0 >$t/instances/lab-capture/tracing_on
cat $t/instances/lab-capture/trace >capture.trace
echo nop >$t/instances/lab-capture/current_tracer
rmdir $t/instances/lab-capture
state >state-0
# CPU 0's time (/proc/stat, in USER_HZ) around each run: what the reading side of each tool
# cost the guest's housekeeping CPU (under TCG its work slows the emulation of CPU 1 too).
cpu0() { grep '^cpu0 ' /proc/stat >>"$1"; }
for k in 1 2; do
    cpu0 "rtla-$k.cpu0"
    rtla timerlat hist -c 1 -d 10s >"rtla-$k.txt" 2>"rtla-$k.err"
    echo $? >"rtla-$k.exit"
    cpu0 "rtla-$k.cpu0"
    cpu0 "jl-$k.cpu0"
    /jitterlab timerlat hist -c 1 -d 10s --jitterlab-out "jl-$k" >"jl-$k.txt" 2>"jl-$k.err"
    echo $? >"jl-$k.exit"
    cpu0 "jl-$k.cpu0"
    state >"state-$k"
done
# SIGKILL: a 30 s run killed after 3 s leaves its instance and its osnoise options (cpus 1) with
# their journals; the next start (a 1 s run) removes the instance and sets the options back.
/jitterlab timerlat hist -c 1 -p 500 -d 30s --jitterlab-out jl-killed >jl-killed.txt 2>jl-killed.err &
victim=$!
sleep 3
state >state-running
kill -KILL $victim
wait $victim
echo $? >jl-killed.exit
state >state-killed
/jitterlab timerlat hist -c 1 -d 1s --jitterlab-out jl-after >jl-after.txt 2>jl-after.err
echo $? >jl-after.exit
state >state-after
