//! `jitterlab oslat --help` (and `-h`): the options taken, in oslat's words and units, and the
//! ones refused (the reasons are in `options::REFUSED` and docs/oslat.md).

pub(crate) const TEXT: &str = "\
jitterlab oslat: rt-tests 2.40 oslat's command line and output, measured by jitterlab
Usage: jitterlab oslat [options]   (or the binary called through a link named oslat)

-b, --bucket-size N      number of 1 us buckets (5-1024, default 32); the last holds longer gaps too
-c, --cpu-list LIST      CPUs to run on, e.g. '1,3,5,7-15' (default: every online CPU)
-C, --cpu-main-thread N  CPU of the main thread (jitterlab's recorder), default 0
-D, --duration TIME      test duration in s, or with m, h or d, e.g. 60, 20m, 2H (default 1)
    --json=FILENAME      write the final results into FILENAME, in oslat's JSON layout
-f, --rtprio PRIO        SCHED_FIFO at PRIO (1-99); default SCHED_OTHER
-m, --workload-mem SIZE  accepted; there is no workload to size
-q, --quiet              print the summary only
-s, --single-preheat     accepted; jitterlab has no pre-heat phase
-v, --version            print the version line and exit
-w, --workload no        the only workload: none (memmove is refused)
-z, --zero-omit          leave out histogram rows that are zero on every CPU
-h, --help               this text
    --jitterlab-out DIR  the jitterlab result directory (default: a new one, named on stderr)

Refused, with the reason (exit 2): -B/--bias, -T/--trace-threshold, -w memmove, -W.
jitterlab measures with its noise loop (`jitterlab noise`, threshold 999ns, every gap kept);
the figures follow oslat's rules (docs/oslat.md) and the result directory holds every gap.
";
