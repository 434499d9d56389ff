//! One run of the recorder under a simulated machine (`jitterlab::recorder::scale`), for
//! bench/recorder-scale.sh: CPUS simulated measuring threads woken every INTERVAL for SECONDS,
//! their samples pushed into real rings by one producer thread (pinned to CPU 1) and drained
//! by the real recorder (pinned to CPU 0), with or without the compact trace records of the
//! eBPF back end's design. Prints one line of figures, every number with its unit.
//!
//! cargo run --release --example recorder-scale -- CPUS INTERVAL SECONDS [none|compact]

use jitterlab::recorder::scale::{ScaleConfig, TraceLoad, run};
use jitterlab::units::parse_duration_ns;

/// Each ring holds this long at the simulated interval, as `run`'s default rings do.
const RING_SECONDS: u64 = 4;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: recorder-scale CPUS INTERVAL SECONDS [none|compact]";
    let [cpus, interval, seconds, rest @ ..] = args.as_slice() else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let cpus: usize = cpus.parse().expect("CPUS is a whole number");
    let interval_ns = parse_duration_ns(interval).expect("INTERVAL is a duration, e.g. 50us");
    let seconds: u64 = seconds.parse().expect("SECONDS is a whole number");
    let trace = match rest.first().map(String::as_str) {
        None | Some("none") => TraceLoad::None,
        Some("compact") => TraceLoad::Compact,
        Some(other) => panic!("{other}: not none or compact; {usage}"),
    };
    let online = std::thread::available_parallelism().map_or(1, |n| n.get());
    let config = ScaleConfig {
        cpus,
        interval_ns,
        duration_ns: seconds * 1_000_000_000,
        ring_size: (RING_SECONDS * 1_000_000_000 / interval_ns).clamp(4096, 1 << 22) as usize,
        trace,
        recorder_cpu: Some(0),
        producer_cpu: (online > 1).then_some(1),
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let r = run(&config, dir.path()).expect("the simulation runs");
    let rate = r.rate_per_s(config.duration_ns);
    let kept_up = r.kept_up(config.duration_ns, 100_000_000);
    println!(
        "cpus={cpus} interval={interval} trace={} rate={:.0}/s produced={} dropped={} recorder_cpu={:.1}% cpu_per_sample={:.1}ns backlog={:.1}ms finish_cpu={:.0}ms drains={} producer_behind={:.1}ms kept_up={}",
        match trace {
            TraceLoad::None => "none",
            TraceLoad::Compact => "compact",
        },
        rate,
        r.produced,
        r.dropped,
        r.core_share(config.duration_ns) * 100.0,
        r.cpu_per_sample_ns(),
        r.backlog_ns as f64 / 1e6,
        r.finish_cpu_ns as f64 / 1e6,
        r.drains,
        r.producer_behind_ns as f64 / 1e6,
        if kept_up { "yes" } else { "no" },
    );
}
