//! cyclictest's options to a jitterlab [`RunPlan`]: which thread runs on which CPU, at which
//! policy, priority and interval, for how long, by cyclictest's rules (rt-tests 2.x), then the
//! plan made and checked exactly as `jitterlab run` makes it, by translating them into the
//! plan's option groups for `plan::build`. Every sample is kept (`--samples`): the figures
//! cyclictest prints (the last latency, the 1 us histogram, the cycle numbers of overflows)
//! are computed from them exactly.

use super::options::{Affinity, CyclictestOptions, Threads, Timer};
use crate::cpulist::{format_cpu_list, parse_cpu_list};
use crate::error::{Failure, Result};
use crate::measure::{Clock, PolicyKind, WakeMethod};
use crate::plan::RunPlan;
use crate::plan::options::{LatencyRunOptions, LengthOptions};

/// cyclictest's default distance between the intervals of successive threads, us.
const DEFAULT_DISTANCE_US: u64 = 500;

/// What a cyclictest run is, in cyclictest's terms, besides the jitterlab plan.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Per thread, in thread order: the CPU it is pinned to and its interval, us.
    pub threads: Vec<(usize, u64)>,
    /// The priority cyclictest would print (`P:`).
    pub priority: i32,
    pub policy: PolicyKind,
    /// Notes cyclictest prints on stderr (priority defaults, ignored options).
    pub(crate) notes: Vec<String>,
}

/// cyclictest's fix for a refused mlockall: it locks only with `-m`, as rt-tests' does.
const MLOCK_FIX: &str = "leave out -m (--mlockall) to measure with page faults possible, as rt-tests' cyclictest does by default";

/// The layout and the plan, checked.
pub fn plan(o: &CyclictestOptions, online: &[usize]) -> Result<(Layout, RunPlan)> {
    let layout = layout(o, online)?;
    let options = run_options(o, &layout)?;
    let plan = crate::plan::build::latency(&options, online).map_err(|f| Failure {
        code: f.code,
        message: format!("cyclictest: {}", f.message),
    })?;
    let mut plan = crate::commands::dropin::as_dropin(plan);
    // Without -m nothing is locked (as rt-tests' cyclictest), so there is no refusal to fix
    // and no `--no-mlock` warning to give.
    plan.mlock_fix = o.mlockall.then_some(MLOCK_FIX);
    Ok((layout, plan))
}

/// Threads, CPUs, policy and priority by cyclictest's rules.
pub fn layout(o: &CyclictestOptions, online: &[usize]) -> Result<Layout> {
    let cpus = thread_cpus(o, online)?;
    let mut notes = o.warnings.clone();
    let (policy, priority) = policy_and_priority(o, cpus.len(), &mut notes)?;
    if o.interval_us == 0 {
        return Err(Failure::usage(
            "cyclictest: -i 0: the interval must be at least 1 (us)",
        ));
    }
    // With a histogram every thread has the same interval (cyclictest ignores -d then).
    let distance = if o.histogram_us > 0 {
        0
    } else {
        o.distance_us.unwrap_or(DEFAULT_DISTANCE_US)
    };
    let threads = cpus
        .iter()
        .enumerate()
        .map(|(k, &cpu)| (cpu, o.interval_us + k as u64 * distance))
        .collect();
    Ok(Layout {
        threads,
        priority,
        policy,
        notes,
    })
}

/// The CPU of each thread: thread i on the (i mod n)-th CPU of the affinity, as cyclictest
/// pins them. jitterlab measures one thread per CPU, so more threads than CPUs is refused.
fn thread_cpus(o: &CyclictestOptions, online: &[usize]) -> Result<Vec<usize>> {
    let base = match &o.affinity {
        Affinity::List(text) => online_cpu_list(text, "-a", online)?,
        Affinity::All | Affinity::Unspecified => online.to_vec(),
    };
    let n = match o.threads {
        Threads::One => 1,
        Threads::PerCpu => base.len(),
        Threads::Count(n) => n,
    };
    if n == 0 {
        return Err(Failure::usage(
            "cyclictest: no CPU to run a thread on; name CPUs with -a",
        ));
    }
    if n > base.len() {
        return Err(Failure::usage(format!(
            "cyclictest: {n} threads on {} CPU(s) ({}): jitterlab measures with one thread per CPU, so threads sharing a CPU would measure each other; use -t {} or fewer, or add CPUs with -a",
            base.len(),
            format_cpu_list(&base),
            base.len()
        )));
    }
    Ok(base[..n].to_vec())
}

/// The CPU list `text` of `option` (`-a`, `--mainaffinity`), each CPU online; else exit 2
/// naming the CPU and the online ones (one check for both options: issue 39 R14).
pub(crate) fn online_cpu_list(text: &str, option: &str, online: &[usize]) -> Result<Vec<usize>> {
    let cpus = parse_cpu_list(text)
        .map_err(|e| Failure::usage(format!("cyclictest: {option} {text}: {e}")))?;
    if let Some(c) = cpus.iter().find(|c| !online.contains(c)) {
        return Err(Failure::usage(format!(
            "cyclictest: {option} {text}: CPU {c} is not online; this system's online CPUs are {}",
            format_cpu_list(online)
        )));
    }
    Ok(cpus)
}

/// cyclictest's rules: a priority makes the policy FIFO unless it is RR; a real-time policy
/// without a priority gets threads + 1; without either, SCHED_OTHER at 0.
fn policy_and_priority(
    o: &CyclictestOptions,
    threads: usize,
    notes: &mut Vec<String>,
) -> Result<(PolicyKind, i32)> {
    let mut policy = match o.policy.as_deref() {
        None | Some("other") | Some("normal") => PolicyKind::Other,
        Some("batch") => PolicyKind::Batch,
        Some("idle") => PolicyKind::Idle,
        Some("fifo") => PolicyKind::Fifo,
        Some("rr") => PolicyKind::Rr,
        Some(other) => {
            return Err(Failure::usage(format!(
                "cyclictest: --policy {other}: expected other, normal, batch, idle, fifo or rr"
            )));
        }
    };
    let mut priority = o.priority.unwrap_or(0);
    if !(0..=99).contains(&priority) {
        return Err(Failure::usage(format!(
            "cyclictest: -p {priority}: expected a priority 0 to 99"
        )));
    }
    let realtime = |p: PolicyKind| matches!(p, PolicyKind::Fifo | PolicyKind::Rr);
    if priority > 0 && !realtime(policy) {
        if o.policy.is_some() {
            notes.push("policy and priority don't match: setting policy to SCHED_FIFO".into());
        }
        policy = PolicyKind::Fifo;
    }
    if realtime(policy) && priority == 0 {
        priority = threads as i32 + 1;
        notes.push(format!("defaulting realtime priority to {priority}"));
    }
    Ok((policy, priority.min(99)))
}

/// The option groups of the same measurement as `jitterlab run` has them: every sample kept,
/// the threads' CPUs (in thread order, which is ascending), policy, priority, interval and
/// distance, the wake method, the clock, PM QoS and the length.
fn run_options(o: &CyclictestOptions, layout: &Layout) -> Result<LatencyRunOptions> {
    let cpus: Vec<usize> = layout.threads.iter().map(|&(cpu, _)| cpu).collect();
    let distance = layout
        .threads
        .get(1)
        .map_or(0, |t| t.1 - layout.threads[0].1);
    let mut r = LatencyRunOptions::default();
    r.records.samples = true;
    r.shared.cpus.cpus = Some(format_cpu_list(&cpus));
    r.shared.cpus.priority = Some(layout.priority);
    r.shared.cpus.pm_qos = pm_qos(o);
    r.shared.length = Some(length(o, layout)?);
    r.shared.output.out = o.jitterlab_out.clone();
    // rt-tests' cyclictest locks memory only with -m (--mlockall).
    r.shared.cpus.no_mlock = !o.mlockall;
    r.latency.policy = layout.policy;
    r.latency.interval = format!("{}us", o.interval_us);
    r.latency.distance = format!("{distance}us");
    r.latency.wake = wake_method(o.timer);
    r.latency.clock = clock(o.clock)?;
    Ok(r)
}

fn wake_method(timer: Timer) -> &'static WakeMethod {
    let name = match timer {
        Timer::Absolute => "clock-nanosleep",
        Timer::Relative => "clock-nanosleep-rel",
        Timer::System => "nanosleep",
        Timer::PosixTimer => "posix-timer",
    };
    WakeMethod::named(name).expect("the wake table has cyclictest's timers")
}

fn clock(clock: u32) -> Result<Clock> {
    match clock {
        0 => Ok(Clock::Monotonic),
        1 => Ok(Clock::Realtime),
        n => Err(Failure::usage(format!(
            "cyclictest: -c {n}: expected 0 (CLOCK_MONOTONIC) or 1 (CLOCK_REALTIME)"
        ))),
    }
}

fn pm_qos(o: &CyclictestOptions) -> String {
    match (o.no_pm_qos, o.pm_qos_us) {
        (true, _) => "off".into(),
        (false, Some(us)) => us.to_string(),
        (false, None) => "0".into(),
    }
}

/// `-D` and `-l` as a jitterlab length. rt-tests' cyclictest ends every thread when one has
/// done its `-l` loops (its main loop stops all at the first thread that reaches them: thread
/// 0, of the shortest interval), or at `-D`, whichever comes first. So `-l N` is the plan's
/// loops (each thread stops at N) and `mod.rs` ends the run when the first thread has done N
/// (`Session::end_as_completed`); with `-D` too, the duration when it ends before thread 0's
/// N loops are due. Neither: cyclictest runs until SIGINT, jitterlab until its longest run
/// (3650 days) or SIGINT.
fn length(o: &CyclictestOptions, layout: &Layout) -> Result<LengthOptions> {
    let duration_s = o.duration_s.filter(|&s| s > 0);
    let loops = (o.loops > 0).then_some(o.loops);
    let as_loops = |n: u64| LengthOptions {
        loops: Some(n),
        ..LengthOptions::default()
    };
    let as_duration = |s: u64| LengthOptions {
        duration: Some(format!("{s}s")),
        ..LengthOptions::default()
    };
    match (duration_s, loops) {
        (None, None) => Ok(LengthOptions {
            duration: Some("3650d".into()),
            ..LengthOptions::default()
        }),
        (Some(s), None) => Ok(as_duration(s)),
        (None, Some(n)) => Ok(as_loops(n)),
        (Some(s), Some(n)) => {
            let shortest_us = layout.threads.iter().map(|t| t.1).min().unwrap_or(0);
            match n.saturating_mul(shortest_us) <= s.saturating_mul(1_000_000) {
                true => Ok(as_loops(n)),
                false => Ok(as_duration(s)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::cyclictest::options::parse;

    fn layout_of(line: &str, online: &[usize]) -> Result<Layout> {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        layout(&parse(&args).unwrap(), online)
    }

    #[test]
    fn threads_and_intervals_as_cyclictest_lays_them_out() {
        let l = layout_of("", &[0, 1, 2]).unwrap();
        assert_eq!(l.threads, vec![(0, 1000)]);
        assert_eq!((l.policy, l.priority), (PolicyKind::Other, 0));
        let l = layout_of("-t -p 80 -i 200", &[0, 1, 2]).unwrap();
        assert_eq!(l.threads, vec![(0, 200), (1, 700), (2, 1200)]);
        assert_eq!((l.policy, l.priority), (PolicyKind::Fifo, 80));
        let l = layout_of("-S -h 100 -d 50", &[0, 1]).unwrap();
        assert_eq!(l.threads, vec![(0, 1000), (1, 1000)]);
        let l = layout_of("-a 1 --policy rr", &[0, 1]).unwrap();
        assert_eq!(l.threads, vec![(1, 1000)]);
        assert_eq!((l.policy, l.priority), (PolicyKind::Rr, 2));
        assert!(l.notes[0].contains("defaulting realtime priority to 2"));
        // LAVA's `-t 0 -a all`: one thread per online CPU (issue 39 R11).
        let l = layout_of("-t 0 -a all -p 90", &[0, 1]).unwrap();
        assert_eq!(l.threads, vec![(0, 1000), (1, 1500)]);
        let l = layout_of("-a 1 -t 0", &[0, 1]).unwrap();
        assert_eq!(l.threads, vec![(1, 1000)]);
    }

    #[test]
    fn what_jitterlab_cannot_lay_out_is_refused() {
        let e = layout_of("-t 3", &[0, 1]).unwrap_err();
        assert!(e.message.contains("one thread per CPU"), "{}", e.message);
        let e = layout_of("-a 7", &[0, 1]).unwrap_err();
        assert!(e.message.contains("CPU 7 is not online"), "{}", e.message);
        // --mainaffinity's CPUs are checked as -a's (issue 39 R14).
        let e = online_cpu_list("99", "--mainaffinity", &[0, 1]).unwrap_err();
        assert_eq!(e.code, crate::error::ExitCode::Usage);
        assert_eq!(
            e.message,
            "cyclictest: --mainaffinity 99: CPU 99 is not online; this system's online CPUs are 0-1"
        );
        assert!(online_cpu_list("x", "--mainaffinity", &[0, 1]).is_err());
        assert_eq!(
            online_cpu_list("1", "--mainaffinity", &[0, 1]).unwrap(),
            [1]
        );
        assert!(layout_of("-p 100", &[0, 1]).is_err());
        assert!(layout_of("--policy deadline", &[0, 1]).is_err());
    }

    #[test]
    fn loops_and_duration_pick_what_ends_first() {
        let o = |line: &str| {
            let args: Vec<String> = line.split_whitespace().map(String::from).collect();
            parse(&args).unwrap()
        };
        let run = |line: &str| {
            let opts = o(line);
            let l = layout(&opts, &[0, 1]).unwrap();
            length(&opts, &l).map(|l| (l.duration, l.loops))
        };
        assert_eq!(run("-l 100 -D 10").unwrap(), (None, Some(100)));
        assert_eq!(run("-l 100000 -D 10").unwrap(), (Some("10s".into()), None));
        assert_eq!(run("").unwrap(), (Some("3650d".into()), None));
        // Thread 0 (1 ms) does its 100 loops in 0.1 s, before -D 1 ends: every thread ends
        // then, thread 1 (101 ms) after its first wakeup, as rt-tests' cyclictest ends.
        assert_eq!(
            run("-t 2 -i 1000 -d 100000 -l 100 -D 1").unwrap(),
            (None, Some(100))
        );
        assert_eq!(
            run("-t 2 -i 100000 -d 1000 -l 100 -D 1").unwrap(),
            (Some("1s".into()), None)
        );
    }
}
