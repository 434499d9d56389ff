//! `jitterlab monitor`: the `run` options resolved as for `run` into a plan without end, the
//! monitor's own options checked, the /metrics port bound, all before anything starts; then a
//! [`Session`] polled until SIGINT or SIGTERM, its figures rendered for each scrape.

use crate::cli::MonitorArgs;
use crate::error::{ExitCode, Failure, Result};
use crate::format::run_record::Ended;
use crate::monitor::http::{self, Published};
use crate::monitor::{LiveMetrics, MAX_WINDOW_NS, UPDATE_EVERY_NS};
use crate::plan::actions::Action;
use crate::plan::{Retain, RunPlan, SegmentPlan};
use crate::report::export::system_facts::SystemFacts;
use crate::report::openmetrics::{Identity, Syntax, render};
use crate::session::{Progress, Session, SessionOptions};
use crate::units::{format_ns, parse_duration_ns, parse_size_bytes};
use std::fmt::Write;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};

/// A validated `jitterlab monitor`.
#[derive(Debug)]
pub(crate) struct MonitorPlan {
    pub run: RunPlan,
    pub listen: SocketAddr,
    pub(crate) window_ns: u64,
}

pub fn run(args: &MonitorArgs) -> Result<i32> {
    let plan = resolve_monitor(args)?;
    // Bound before the session starts: a port in use is refused before anything measures.
    let listener = bind(plan.listen)?;
    if args.check.dry_run {
        // Released at once: the port was free, and nothing listens on it.
        drop(listener);
        crate::stdout::write(&dry_run(&plan)?)?;
        return Ok(0);
    }
    let mut session = Session::start(
        &plan.run,
        SessionOptions {
            quiet: args.output.quiet,
            command_line: std::env::args().collect(),
        },
    )?;
    let identity = identity(&session);
    let mut metrics = LiveMetrics::new(&plan.run, plan.window_ns, identity);
    let published = Published::default();
    // Served to a scrape the recorder has no time to answer: the families with no samples yet.
    metrics.take_in(0, session.cpu_states());
    published.set(render(&metrics.exposition(), Syntax::Prometheus));
    http::serve(listener, published.clone())
        .map_err(|e| Failure::system(format!("cannot start the /metrics thread: {e}")))?;
    if !args.output.quiet {
        eprintln!(
            "jitterlab: monitoring; metrics at http://{}/metrics, results in {}; stop with Ctrl-C or SIGTERM",
            plan.listen,
            session.dir().path.display()
        );
    }
    loop {
        std::thread::sleep(session.next_poll_in());
        if session.poll() == Progress::Ended {
            break;
        }
        // Rendered only for a scrape that waits for it; taken in for it, or when the windows
        // are due to slide (once a second).
        let wanted = published.wanted();
        let elapsed_ns = session.elapsed_ns();
        if wanted || metrics.slide_due(elapsed_ns) {
            metrics.take_in(elapsed_ns, session.cpu_states());
            metrics.take_counters(session.counter_totals());
        }
        if wanted {
            published.set(render(&metrics.exposition(), Syntax::Prometheus));
        }
    }
    let outcome = session.finish();
    if !args.output.quiet {
        crate::stdout::write(&crate::report::terminal::summary(
            &outcome.record,
            &outcome.dir.path,
            args.output.verbose,
        ))?;
    }
    // A failure is said on stderr whatever --quiet (issue 39 L-a).
    if outcome.record.ended == Ended::Failed
        && let Some(line) = super::run::failure_line(&outcome.record, &outcome.dir.path)
    {
        eprintln!("{}", crate::error::escape_controls(&line));
    }
    // Ending on a signal is how a monitor ends: exit 0. Budgets are judged on the window by
    // the metrics, not by the exit code.
    Ok(match outcome.record.ended {
        Ended::Failed => ExitCode::Run as i32,
        _ => 0,
    })
}

/// `monitor --dry-run`: the checks of `run --dry-run` (nothing made, started or changed) and
/// the port checked free (bound and released by the caller), then the plan in words.
fn dry_run(plan: &MonitorPlan) -> Result<String> {
    let checked = super::run::dry_run::check(&plan.run)?;
    // The run's description, under the monitor's own first line.
    let mut t = String::from(
        "jitterlab monitor --dry-run: every check passed; nothing was started, written or listened on.\n",
    );
    t += checked.split_once('\n').map_or("", |(_, rest)| rest);
    let segments = plan.run.segments.expect("a monitor's plan has segments");
    let retain = match segments.retain {
        Retain::Forever => "every segment kept".to_string(),
        Retain::Age(ns) => format!("segments deleted {} after they end", format_ns(ns)),
        Retain::Bytes(b) => {
            format!("the oldest segments deleted to keep the directory within {b} bytes")
        }
    };
    let _ = writeln!(
        t,
        "    the log in segments of {}; {retain}",
        format_ns(segments.length_ns)
    );
    let loads = plan
        .run
        .loads
        .iter()
        .filter(|l| matches!(l, crate::load::LoadSpec::Generator(_)))
        .count();
    if loads > 0 {
        let _ = writeln!(
            t,
            "    loads/: each load's log at most {} bytes, and one older part (.1)",
            segments.load_log_cap(loads)
        );
    }
    let _ = writeln!(
        t,
        "  metrics: http://{}/metrics (port free), windows of {}",
        plan.listen,
        format_ns(plan.window_ns)
    );
    Ok(t)
}

/// The labels of `jitterlab_info`, from the run.json the session wrote at its start.
fn identity(session: &Session) -> Identity {
    let facts = crate::results::loaded::open(&session.dir().path)
        .ok()
        .map(|r| SystemFacts::of(&r.record));
    let (kernel, preemption, host) = facts.map_or_else(
        || ("unknown".into(), "unknown".into(), "unknown".into()),
        |f| (f.kernel_release, f.preemption, f.host),
    );
    Identity {
        version: env!("CARGO_PKG_VERSION").into(),
        kernel,
        preemption,
        host,
    }
}

/// Every option checked, the latency groups as for `run` plus the monitor's own; exit 2 for bad
/// input.
pub(crate) fn resolve_monitor(args: &MonitorArgs) -> Result<MonitorPlan> {
    let listen = listen_address(&args.listen, args.listen_public)?;
    let window_ns =
        parse_duration_ns(&args.window).map_err(|e| Failure::usage(format!("--window: {e}")))?;
    if !(UPDATE_EVERY_NS..=MAX_WINDOW_NS).contains(&window_ns) {
        return Err(Failure::usage(format!(
            "--window {}: outside 1s..7d; the metrics are updated once a second, and a window is kept in memory (e.g. 1m, 5m, 1h)",
            args.window
        )));
    }
    let segments = segment_plan(args)?;
    let online = crate::plan::build::online()?;
    let mut run = crate::plan::build::run(&args.options(), &args.action_options(), &online)?;
    run.segments = Some(segments);
    // Snapshots are not segments: --retain and --retain-size would not bound them.
    if let Some(a) = run
        .actions
        .on_threshold
        .iter()
        .find(|a| matches!(a, Action::Snapshot { .. }))
    {
        return Err(Failure::usage(format!(
            "--on-threshold {}: not with monitor: snapshots are kept outside the segments, so --retain and --retain-size would not bound them and a monitor's would grow without end; use exec: to save what you need, or snapshot on `jitterlab run`",
            a.describe()
        )));
    }
    Ok(MonitorPlan {
        run,
        listen,
        window_ns,
    })
}

/// `--segment`, `--retain`, `--retain-size`.
fn segment_plan(args: &MonitorArgs) -> Result<SegmentPlan> {
    let length_ns =
        parse_duration_ns(&args.segment).map_err(|e| Failure::usage(format!("--segment: {e}")))?;
    let log_interval_ns = parse_duration_ns(&args.output.log_interval).unwrap_or(0);
    if length_ns == 0 || length_ns < log_interval_ns {
        return Err(Failure::usage(format!(
            "--segment {}: shorter than --log-interval {}; a segment holds whole log intervals (e.g. 1h)",
            args.segment, args.output.log_interval
        )));
    }
    let retain = match (&args.retain_size, args.retain.as_str()) {
        (Some(size), _) => {
            let bytes = parse_size_bytes(size)
                .map_err(|e| Failure::usage(format!("--retain-size: {e}")))?;
            if bytes == 0 {
                return Err(Failure::usage(
                    "--retain-size 0: nothing could be kept; give a size such as 1GiB",
                ));
            }
            Retain::Bytes(bytes)
        }
        (None, "forever") => Retain::Forever,
        (None, age) => {
            let ns = parse_duration_ns(age).map_err(|e| {
                Failure::usage(format!("--retain: {e}, or 'forever' to keep every segment"))
            })?;
            if ns < length_ns {
                return Err(Failure::usage(format!(
                    "--retain {age}: shorter than --segment {} ({}); keep at least one segment",
                    args.segment,
                    format_ns(length_ns)
                )));
            }
            Retain::Age(ns)
        }
    };
    Ok(SegmentPlan { length_ns, retain })
}

/// `--listen`: one address, loopback unless `--listen-public`.
fn listen_address(text: &str, public: bool) -> Result<SocketAddr> {
    let accepted = "HOST:PORT, e.g. 127.0.0.1:9467 or [::1]:9467";
    let addr = text
        .to_socket_addrs()
        .map_err(|e| Failure::usage(format!("--listen {text}: {e}; expected {accepted}")))?
        .next()
        .ok_or_else(|| {
            Failure::usage(format!(
                "--listen {text}: names no address; expected {accepted}"
            ))
        })?;
    if !addr.ip().is_loopback() && !public {
        return Err(Failure::usage(format!(
            "--listen {text}: {} is not a loopback address, and the metrics would reach the network; add --listen-public to allow it, or listen on 127.0.0.1",
            addr.ip()
        )));
    }
    Ok(addr)
}

/// Binds the /metrics port; a port in use or a privileged port refused is exit 3.
fn bind(addr: SocketAddr) -> Result<TcpListener> {
    TcpListener::bind(addr).map_err(|e| {
        let fix = match e.kind() {
            std::io::ErrorKind::AddrInUse => format!(
                "port {} is in use (another jitterlab monitor or service?); stop it, or pass --listen with a free port",
                addr.port()
            ),
            std::io::ErrorKind::PermissionDenied => format!(
                "port {} needs privileges; run as root, or pass --listen with a port above 1023",
                addr.port()
            ),
            _ => "pass --listen with an address of this machine".into(),
        };
        Failure::system(format!("cannot listen on {addr}: {e}; {fix}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::RunLength;
    use clap::Parser;

    fn args(extra: &[&str]) -> MonitorArgs {
        let mut argv = vec!["jitterlab", "monitor"];
        argv.extend_from_slice(extra);
        match crate::cli::Cli::try_parse_from(argv).unwrap().command {
            crate::cli::Command::Monitor(a) => *a,
            _ => unreachable!(),
        }
    }

    fn err(extra: &[&str]) -> String {
        let e = resolve_monitor(&args(extra)).unwrap_err();
        assert_eq!(e.code, ExitCode::Usage, "{}", e.message);
        e.message
    }

    #[test]
    fn defaults() {
        let p = resolve_monitor(&args(&[])).unwrap();
        assert_eq!(p.run.length, RunLength::Endless);
        assert_eq!(p.listen, "127.0.0.1:9467".parse().unwrap());
        assert_eq!(p.window_ns, 300_000_000_000);
        assert_eq!(
            p.run.segments,
            Some(SegmentPlan {
                length_ns: 3_600_000_000_000,
                retain: Retain::Age(7 * 86_400_000_000_000)
            })
        );
        let p = resolve_monitor(&args(&["--retain-size", "1GiB", "--segment", "10m"])).unwrap();
        assert_eq!(p.run.segments.unwrap().retain, Retain::Bytes(1 << 30));
        let p = resolve_monitor(&args(&["--retain", "forever"])).unwrap();
        assert_eq!(p.run.segments.unwrap().retain, Retain::Forever);
        let p = resolve_monitor(&args(&["--listen", "0.0.0.0:9000", "--listen-public"])).unwrap();
        assert_eq!(p.listen.port(), 9000);
    }

    #[test]
    fn bad_inputs_name_the_option() {
        assert!(err(&["--listen", "0.0.0.0:9467"]).contains("add --listen-public"));
        assert!(err(&["--listen", "nonsense"]).starts_with("--listen nonsense:"));
        assert!(err(&["--window", "5"]).contains("--window: '5' has no unit"));
        assert!(err(&["--window", "10ms"]).contains("outside 1s..7d"));
        assert!(err(&["--window", "8d"]).contains("outside 1s..7d"));
        assert!(err(&["--segment", "10ms"]).contains("shorter than --log-interval"));
        assert!(err(&["--retain", "1m", "--segment", "1h"]).contains("keep at least one"));
        assert!(err(&["--retain", "always"]).contains("'forever'"));
        assert!(err(&["--retain-size", "lots"]).contains("--retain-size: 'lots'"));
        // The options of a run that ends are not the monitor's: clap refuses them (exit 2).
        for extra in [
            &["--duration", "10s"][..],
            &["--loops", "10"],
            &["--scenario", "s.toml"],
            &["--samples"],
            &["--summary-every", "10"],
            &["--interval-step", "1us"],
            &["--json"],
        ] {
            let mut argv = vec!["jitterlab", "monitor"];
            argv.extend_from_slice(extra);
            let e = crate::cli::Cli::try_parse_from(argv).unwrap_err();
            assert_eq!(
                e.kind(),
                clap::error::ErrorKind::UnknownArgument,
                "{extra:?}"
            );
            assert_eq!(e.exit_code(), 2);
        }
        // The run options are checked as for `run`.
        assert!(err(&["--interval", "0ms"]).contains("below 1us"));
    }

    #[test]
    fn a_port_in_use_is_exit_3_naming_it() {
        let held = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = held.local_addr().unwrap();
        let e = bind(addr).unwrap_err();
        assert_eq!(e.code, ExitCode::System);
        assert!(
            e.message
                .contains(&format!("port {} is in use", addr.port())),
            "{}",
            e.message
        );
    }
}
