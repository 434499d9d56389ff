# Check 1 (bpf): the trace ground-truth scene of tests/measuring/trace.rs at the issue's
# size: 20 ms spikes of a FIFO 99 thread on CPU 0 every 400 ms, the measuring threads woken by
# clock_nanosleep at FIFO 95 on CPUs 0-1, traced by the BPF back end.
/jitterlab run --wake clock-nanosleep --duration 6s --cpus 0-1 --samples --trace \
    --trace-backend bpf --quiet \
    --load spike:cpu=0,every=400ms,len=20ms,prio=99,offset=399.7ms --out run >stdout 2>stderr
echo $? >run.exit
