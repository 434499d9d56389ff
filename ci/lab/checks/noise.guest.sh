# Check 3: `jitterlab noise` beside the real `rtla osnoise top` on CPU 1, with a known injected
# noise: a FIFO 99 spike of 5 ms every 100 ms on CPU 1 (5% of the CPU), made by a jitterlab run
# that measures CPU 0 only (its spike load pinned to CPU 1), so that one injector serves both
# tools. Both measure at FIFO 95 (below the spike) with RT throttling off (the guest is ours),
# interleaved: rtla, jitterlab, rtla, jitterlab, 4 s each, with a threshold of 500 us: under
# TCG an iteration of either loop takes microseconds, so a finer threshold counts the
# emulator's own pace as noise (100% for jitterlab, 24% for rtla at their defaults).
# rtla osnoise needs the kernel's osnoise tracer (CONFIG_OSNOISE_TRACER): where tracefs does not
# list it (Debian's standard 6.1 kernel), rtla cannot run (it exits 1, "Failed to apply CPUs
# config": it cannot read osnoise/cpus), so jitterlab measures alone, against the injection.
cat /sys/kernel/tracing/available_tracers >available_tracers
grep -qw osnoise available_tracers && rtla=1 || rtla=
echo -1 >/proc/sys/kernel/sched_rt_runtime_us
/jitterlab run --cpus 0 --duration 120s --quiet \
    --load spike:cpu=1,every=100ms,len=5ms,prio=99 --out injector >injector.out 2>injector.err &
inj=$!
sleep 3
for k in 1 2; do
    if [ -n "$rtla" ]; then
        rtla osnoise top -c 1 -d 4s -P f:95 -T 500 -q >"rtla-$k.txt" 2>"rtla-$k.err"
        echo $? >"rtla-$k.exit"
    fi
    /jitterlab noise --cpus 1 --duration 4s --policy fifo --priority 95 --threshold 500us --quiet \
        --out "jl-$k" >"jl-$k.out" 2>"jl-$k.err"
    echo $? >"jl-$k.exit"
done
kill -INT $inj
wait $inj
echo $? >injector.exit
