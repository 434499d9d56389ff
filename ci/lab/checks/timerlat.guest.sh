# Check 2: `jitterlab timerlat hist` beside the real `rtla timerlat hist` on CPU 1 (isolated on
# the RT kernel), interleaved so that rtla runs before and after each jitterlab run: rtla,
# jitterlab, rtla, jitterlab, rtla, 10 s each at rtla's defaults (1 ms period, FIFO 95, buckets
# of 1 us). rtla's three runs measure the guest's own spread, which jitterlab's figures are
# judged against. jitterlab must measure with the kernel's timerlat tracer (its stderr says so).
# The global osnoise options and the tracing instances are listed before and after each
# jitterlab run: what it changed is set back.
# On a kernel without the timerlat tracer (Debian's standard 6.1 is built without it) rtla
# timerlat cannot run; jitterlab falls back to its own threads, saying so: one 10 s run of each,
# rtla's refusal kept, and the fallback's table checked.
t=/sys/kernel/tracing
cat $t/available_tracers >available_tracers
if ! grep -qw timerlat available_tracers; then
    rtla timerlat hist -c 1 -d 10s >rtla-1.txt 2>rtla-1.err
    echo $? >rtla-1.exit
    /jitterlab timerlat hist -c 1 -d 10s --jitterlab-out jl-1 >jl-1.txt 2>jl-1.err
    echo $? >jl-1.exit
    exit 0
fi
ls $t/events/osnoise >osnoise-events 2>&1
state() {
    for f in cpus timerlat_period_us stop_tracing_us stop_tracing_total_us print_stack; do
        printf '%s %s\n' "$f" "$(cat $t/osnoise/$f 2>&1)"
    done
    printf 'instances %s\n' "$(ls $t/instances | tr '\n' ' ')"
    printf 'journals %s\n' "$(ls /run/jitterlab-root 2>/dev/null | grep -c osnoise-options)"
}
# One second of the tracer on both CPUs, for the parsers' fixtures (tests/data/timerlat): its
# text (capture.trace) and the same entries raw (capture-raw/: each CPU's trace_pipe_raw pages,
# read after the text, which does not consume them, and the format files).
mkdir $t/instances/lab-capture
echo timerlat >$t/instances/lab-capture/current_tracer
sleep 1
echo 0 >$t/instances/lab-capture/tracing_on
cat $t/instances/lab-capture/trace >capture.trace
mkdir -p capture-raw/events/ftrace/timerlat
cp $t/events/header_page $t/events/header_event capture-raw/events/
cp $t/events/ftrace/timerlat/format capture-raw/events/ftrace/timerlat/
for c in 0 1; do
    timeout 5 cat $t/instances/lab-capture/per_cpu/cpu$c/trace_pipe_raw >capture-raw/cpu$c.bin
done
echo nop >$t/instances/lab-capture/current_tracer
rmdir $t/instances/lab-capture
state >state-0
# CPU 0's time (/proc/stat, in USER_HZ) around each run, and each tool's own CPU time (utime and
# stime of /proc/PID/stat, with the uptime and CPU 0's line) every second while it runs: what
# the reading side of each tool cost the guest's housekeeping CPU (under TCG its work takes
# host time from the emulated CPU 1 too).
cpu0() { grep '^cpu0 ' /proc/stat >>"$1"; }
# Each thread's too (`$2.threads`: uptime, tid, comm, utime, stime, the CPU it last ran on),
# to tell where a tool's time goes (perf is not in the guest).
sampler() {
    while [ -e "/proc/$1/stat" ]; do
        up=$(cut -d' ' -f1 /proc/uptime)
        echo "$up $(cut -d' ' -f14,15 "/proc/$1/stat" 2>/dev/null) $(grep '^cpu0 ' /proc/stat)" >>"$2"
        for task in /proc/$1/task/*; do
            # comm may hold spaces: the fields after its closing parenthesis.
            st=$(cat "$task/stat" 2>/dev/null) || continue
            # (field 3, the state, first: utime is field 14, stime 15, the last CPU 39)
            rest=${st##*) }
            echo "$up ${task##*/} $(cat "$task/comm" 2>/dev/null | tr ' ' _) $(echo "$rest" | cut -d' ' -f12,13,37)"
        done >>"$2.threads"
        sleep 1
    done
}
rtla_run() {
    cpu0 "rtla-$1.cpu0"
    rtla timerlat hist -c 1 -d 10s >"rtla-$1.txt" 2>"rtla-$1.err" &
    p=$!
    sampler $p "rtla-$1.proc" &
    s=$!
    wait $p
    echo $? >"rtla-$1.exit"
    wait $s
    cpu0 "rtla-$1.cpu0"
}
for k in 1 2; do
    rtla_run $k
    cpu0 "jl-$k.cpu0"
    /jitterlab timerlat hist -c 1 -d 10s --jitterlab-out "jl-$k" >"jl-$k.txt" 2>"jl-$k.err" &
    p=$!
    sampler $p "jl-$k.proc" &
    s=$!
    wait $p
    echo $? >"jl-$k.exit"
    wait $s
    cpu0 "jl-$k.cpu0"
    state >"state-$k"
done
rtla_run 3
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
