# Check 8: the static aarch64 build on Debian's PREEMPT_RT arm64 kernel (qemu-system-aarch64
# -M virt): doctor for the isolated CPU 1, as JSON for the verdict and as text for the reader,
# then check 1b's traced run with the BPF back end (the same scene: 20 ms spikes of a FIFO 99
# thread on CPU 0 every 400 ms, the measuring threads at FIFO 95 on CPUs 0-1).
uname -m >machine
/jitterlab doctor --json --cpus 1 >doctor.json 2>doctor.stderr
echo $? >doctor.exit
/jitterlab doctor --cpus 1 >doctor.txt 2>&1
/jitterlab run --wake clock-nanosleep --duration 6s --cpus 0-1 --samples --trace \
    --trace-backend bpf --quiet \
    --load spike:cpu=0,every=400ms,len=20ms,prio=99,offset=399.7ms --out run >stdout 2>stderr
echo $? >run.exit
# The same scene traced by tracefs, in a directory of its own: what the arm64 kernel gives
# where BPF is refused (reported beside the verdict, which is BPF's).
mkdir -p tracefs && cd tracefs &&
    /jitterlab run --wake clock-nanosleep --duration 6s --cpus 0-1 --samples --trace \
        --trace-backend tracefs --quiet \
        --load spike:cpu=0,every=400ms,len=20ms,prio=99,offset=399.7ms --out run >stdout 2>stderr
echo $? >run.exit
