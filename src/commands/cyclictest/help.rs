//! `jitterlab cyclictest --help`: the options taken, in cyclictest's words and units, and the
//! ones refused (the reasons are in `refused.rs` and docs/cyclictest.md). `-h` is cyclictest's
//! histogram here, so help is only `--help`.

pub(crate) const TEXT: &str = "\
jitterlab cyclictest: rt-tests 2.x cyclictest's command line and output, measured by jitterlab
Usage: jitterlab cyclictest [options]   (or the binary called through a link named cyclictest)

-a [CPUSET] --affinity     pin thread i to the i-th CPU of CPUSET (default: of all CPUs)
-b USEC     --breaktrace   stop once a latency exceeds USEC, naming the thread and value
-c CLOCK    --clock=CLOCK  0 = CLOCK_MONOTONIC (default), 1 = CLOCK_REALTIME
-d DIST     --distance     distance of thread intervals in us, default 500 (0 with -h)
-D TIME     --duration     length of the run in s, or with m, h or d (default: until Ctrl-C)
-h US       --histogram=US print a 1 us latency histogram of US buckets at the end
-H US       --histofall=US as -h, with a column and summary values of all threads
            --histfile=PATH write the histogram to PATH instead of stdout
-i INTV     --interval     base interval of the threads in us, default 1000
            --json=FILE    write the final results into FILE in rt-tests' JSON layout
            --laptop       leave /dev/cpu_dma_latency alone (also --default-system)
            --latency=US   hold /dev/cpu_dma_latency at US (default 0)
-l LOOPS    --loops        wakeups per thread (default: no limit)
            --mainaffinity=CPUSET  pin the main (draining) thread to CPUSET
-m          --mlockall     lock memory (mlockall) and pre-fault the threads' stacks
-n                         accepted: clock_nanosleep is the default (rt-tests 1.x)
-N          --nsecs        print figures in ns instead of us
-p PRIO     --priority     priority of the threads (makes the policy fifo); default 0 (other)
            --policy=NAME  other, normal, batch, idle, fifo or rr
-q          --quiet        print the summary only at the end
-r          --relative     relative clock_nanosleep instead of absolute
-s          --system       nanosleep
-S          --smp          one thread per CPU, every CPU (-a -t)
-t [NUM]    --threads      NUM threads (without NUM: one per CPU); at most one per CPU
-u, -M                     accepted; they change nothing in the final output
-x          --posix_timers POSIX timers instead of clock_nanosleep
            --jitterlab-out=DIR  the jitterlab result directory to make (default: named on stderr)
            --help         this text

Refused (exit 2, with the reason): --tracemark, -C, --smi, -v, -o, -A
--aligned, --secaligned, --priospread, -F --fifo, --spike, --spike-nodes, -R. See
docs/cyclictest.md.
";
