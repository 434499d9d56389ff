# Check 8: the static aarch64 build on Debian's PREEMPT_RT arm64 kernel (qemu-system-aarch64
# -M virt): doctor for the isolated CPU 1, as JSON for the verdict and as text for the reader,
# then a traced run with the BPF back end: check 1's ground truth (a FIFO 99 spike above the
# FIFO 95 measuring thread, every injection found, split and blamed) at a pace the emulated
# arm64 CPUs keep.
#
# Why not check 1b's scene as it is (1 ms on CPUs 0-1, 20 ms spikes every 400 ms): under TCG
# on a loaded 2-core host the emulated arm64 guest missed 4108 and 5207 of 6000 periods, its
# timer handlers "ran" 8-15 ms, and jitterlab's own FIFO 1 threads (the trace reader, the
# recorder), on the measured CPUs with the FIFO 95 threads that never caught up, read the
# trace more than 2 s late: the first 66 wakeups of CPU 0 (the first injection among them)
# were recorded without their trace (run.json `samples_trace_late`), so nothing explained
# them. This check proves BPF on a second architecture, not the emulator's speed: CPU 1 alone
# is measured (isolated: jitterlab's own threads run on CPU 0, as on an RT system's
# housekeeping CPUs, and as checks 1c/1d measure), every 5 ms, with 50 ms spikes every 1 s
# for 12 s (11 injections; at least 5 must be logged).
#
# Timer migration is turned off after doctor (doctor's own advice for a nohz_full CPU): with
# it on, the kernel moves the timers the measuring thread arms on the nohz_full CPU 1 to CPU 0
# and wakes the thread from there; CPU 0 is not measured, and the BPF back end traces the
# measured CPUs only, so it would not follow them (docs/lab.md, docs/tracing.md).
#
# `times`: each step's end in the guest's uptime, s (doctor and each run load and verify the
# BPF programs: what that costs on the emulated arm64 CPU).
top=$(pwd)
step() { echo "$1 $(cut -d' ' -f1 /proc/uptime)" >>"$top/times"; }
uname -m >machine
step start
/jitterlab doctor --json --cpus 1 >doctor.json 2>doctor.stderr
echo $? >doctor.exit
step doctor-json
/jitterlab doctor --cpus 1 >doctor.txt 2>&1
step doctor-text
cat /proc/sys/kernel/timer_migration >timer_migration.before 2>&1
echo 0 >/proc/sys/kernel/timer_migration
scene() {
    /jitterlab run --wake clock-nanosleep --interval 5ms --duration 12s --cpus 1 --samples \
        --trace --trace-backend "$1" --quiet \
        --load spike:cpu=1,every=1s,len=50ms,prio=99,offset=999.7ms --out run >stdout 2>stderr
    echo $? >run.exit
    step "run-$1"
}
scene bpf
# The same scene traced by tracefs, in a directory of its own: what the arm64 kernel gives
# where BPF is refused (reported beside the verdict, which is BPF's).
mkdir -p tracefs && (cd tracefs && scene tracefs)
