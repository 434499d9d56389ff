# Check 1g: timers the kernel moves off the nohz_full CPU 1 (kernel.timer_migration left at
# the boot's 1, as on a system not tuned for RT): `nanosleep` and `clock-nanosleep` on CPU 1,
# FIFO 95, 3 s, the spike ABOVE the measuring thread (FIFO 99, 20 ms every 400 ms), traced by
# tracefs and by BPF. With migration on, the timers the thread arms on CPU 1 expire on the
# housekeeping CPU 0 whenever CPU 0's next timer event comes first (421 of 1019 in a 1d
# nanosleep run: docs/tracing.md); both back ends trace CPU 0 for them (src/trace/migration.rs).
# The BPF runs also keep their raw records (JITTERLAB_BPF_RAW, docs/tracing.md).
cat /proc/sys/kernel/timer_migration >timer_migration 2>/dev/null
for backend in tracefs bpf; do
    for m in nanosleep clock-nanosleep; do
        d=$backend-$m
        mkdir "$d"
        raw=
        [ "$backend" = bpf ] && raw=$PWD/$d/bpf-raw.bin
        JITTERLAB_BPF_RAW=$raw /jitterlab run --wake "$m" --duration 3s --cpus 1 --samples --trace \
            --trace-backend "$backend" --quiet \
            --load "spike:cpu=1,every=400ms,len=20ms,prio=99,offset=399.7ms" \
            --out "$d/run" >"$d/stdout" 2>"$d/stderr"
        echo $? >"$d/run.exit"
    done
done
