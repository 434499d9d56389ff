use super::*;
use crate::error::ExitCode;

fn load(text: &str) -> LoadSpec {
    LoadSpec::parse(text).unwrap()
}

/// The contention of `loads` on a 2-CPU machine, nothing measured, the own threads on both.
fn two_cpus(loads: &[&str]) -> Contention {
    let loads: Vec<LoadSpec> = loads.iter().map(|t| load(t)).collect();
    Contention::of_run(&loads, None, &[0, 1], &[0, 1], &[0, 1], None)
}

fn refused(r: Result<Option<i32>>) -> String {
    let e = r.unwrap_err();
    assert_eq!(e.code, ExitCode::Usage, "{}", e.message);
    e.message
}

#[test]
fn auto_stays_above_every_real_time_load_and_below_the_measurement() {
    // Issue 39: FIFO 50 spinners on every CPU used to leave the drain side at FIFO 1.
    let c = two_cpus(&["cpu:policy=fifo,prio=50"]);
    assert_eq!(resolve(DrainRequest::Auto, 95, &c).unwrap(), Some(51));
    let c = two_cpus(&["cpu:policy=rr,prio=70,cpus=0", "hackbench:prio=20"]);
    assert_eq!(resolve(DrainRequest::Auto, 95, &c).unwrap(), Some(71));
    // No real-time load: 1, as before.
    let c = two_cpus(&["cpu", "spike:cpu=0,prio=99"]);
    assert_eq!(resolve(DrainRequest::Auto, 95, &c).unwrap(), Some(1));
    assert_eq!(resolve(DrainRequest::Auto, 100, &c).unwrap(), Some(1));
    // Above the measuring threads on one CPU only: the own threads keep the other, at the
    // highest priority below the measurement (tests/measuring/scenario.rs runs this).
    let c = two_cpus(&["cpu:workers=1,cpus=0,prio=99"]);
    assert_eq!(resolve(DrainRequest::Auto, 95, &c).unwrap(), Some(94));
}

#[test]
fn a_load_that_leaves_the_own_threads_no_cpu_is_refused_naming_both_priorities() {
    // At or above the highest priority the drain may take, on every CPU.
    let m = refused(resolve(
        DrainRequest::Auto,
        95,
        &two_cpus(&["cpu:policy=fifo,prio=94"]),
    ));
    assert!(
        m.contains("SCHED_FIFO 94 on CPUs 0-1") && m.contains("at most 94"),
        "{m}"
    );
    assert!(m.contains("prio below 94"), "{m}");
    let m = refused(resolve(
        DrainRequest::Fixed(40),
        95,
        &two_cpus(&["cpu:prio=50"]),
    ));
    assert!(
        m.contains("SCHED_FIFO 50") && m.contains("(SCHED_FIFO 40, --drain-priority 40)"),
        "{m}"
    );
    assert!(m.contains("--drain-priority auto"), "{m}");
    let m = refused(resolve(DrainRequest::Off, 95, &two_cpus(&["cpu:prio=1"])));
    assert!(m.contains("normal priority (SCHED_OTHER)"), "{m}");
    // Two loads that each leave a CPU but not together.
    let m = refused(resolve(
        DrainRequest::Fixed(10),
        95,
        &two_cpus(&["cpu:prio=50,cpus=0", "cpu:policy=rr,prio=60,cpus=1"]),
    ));
    assert!(m.contains("SCHED_RR 60 on CPUs 1"), "{m}");
    // Measuring threads that are not real-time: the drain is normal, below any RT load.
    let m = refused(resolve(DrainRequest::Auto, 0, &two_cpus(&["cpu:prio=5"])));
    assert!(m.contains("not real-time"), "{m}");
    // An explicit priority above the loads, or a load that leaves a CPU, is accepted.
    assert_eq!(
        resolve(DrainRequest::Fixed(60), 95, &two_cpus(&["cpu:prio=50"])).unwrap(),
        Some(60)
    );
    assert_eq!(
        resolve(
            DrainRequest::Fixed(10),
            95,
            &two_cpus(&["cpu:prio=50,cpus=1"])
        )
        .unwrap(),
        Some(10)
    );
    // --drain-priority's own range still comes first.
    let m = refused(resolve(DrainRequest::Fixed(95), 95, &Contention::default()));
    assert!(m.contains("must be 1 to 94"), "{m}");
}

#[test]
fn housekeeping_cpus_apart_from_the_loads_need_no_priority() {
    let loads = [load("cpu:prio=90,cpus=measured")];
    let c = Contention::of_run(&loads, None, &[0], &[0, 1], &[1], Some(&[0]));
    assert_eq!(resolve(DrainRequest::Auto, 95, &c).unwrap(), Some(1));
    assert_eq!(resolve(DrainRequest::Off, 95, &c).unwrap(), None);
    // The same load on the housekeeping CPU is refused with off.
    let loads = [load("cpu:prio=90,cpus=housekeeping")];
    let c = Contention::of_run(&loads, None, &[0], &[0, 1], &[1], Some(&[0]));
    assert_eq!(resolve(DrainRequest::Auto, 95, &c).unwrap(), Some(91));
    refused(resolve(DrainRequest::Off, 95, &c));
}

#[test]
fn noise_threads_count_as_busy_cpus() {
    // noise --cpus 1 beside a real-time load on CPU 0: the drain side (normal priority) has
    // neither CPU.
    let mut c = two_cpus(&["cpu:prio=10,cpus=0"]);
    c.spinning = vec![1];
    let m = refused(resolve(DrainRequest::Normal, 95, &c));
    assert!(m.contains("noise threads on CPUs 1"), "{m}");
    // Without a real-time load the noise threads alone are the kind's own design.
    let mut c = two_cpus(&["cpu"]);
    c.spinning = vec![0, 1];
    assert_eq!(resolve(DrainRequest::Normal, 95, &c).unwrap(), None);
}

#[test]
fn loads_alone_get_a_priority_above_theirs() {
    let generator = |t: &str| match load(t) {
        LoadSpec::Generator(g) => g,
        LoadSpec::Spike(_) => unreachable!(),
    };
    let c = Contention::of_loads_alone(&[generator("cpu:prio=50")], &[0, 1], &[0, 1]);
    assert_eq!(alone(&c).unwrap(), Some(51));
    let c = Contention::of_loads_alone(&[generator("cpu")], &[0, 1], &[0, 1]);
    assert_eq!(alone(&c).unwrap(), None);
    let c = Contention::of_loads_alone(&[generator("cpu:prio=99,cpus=1")], &[0, 1], &[0, 1]);
    assert_eq!(alone(&c).unwrap(), Some(99));
    let c = Contention::of_loads_alone(&[generator("cpu:prio=99")], &[0, 1], &[0, 1]);
    let m = refused(alone(&c));
    assert!(m.contains("SCHED_FIFO 99 on CPUs 0-1"), "{m}");
    // `jitterlab load` has no --housekeeping and no run (L5).
    assert!(
        !m.contains("--housekeeping") && !m.contains("the run"),
        "{m}"
    );
    assert!(m.contains("nothing could stop the loads"), "{m}");
    assert!(
        m.contains("or give the load cpus= that leave one of those CPUs free"),
        "{m}"
    );
}

#[test]
fn spikes_longer_than_half_a_second_on_every_cpu_are_refused_and_shorter_ones_do_not_count() {
    // Issue 39, N5: 8 s spikes at FIFO 98 on both CPUs held a SIGINT for 7.2 s.
    let long = [
        "spike:cpu=0,every=10s,len=8s,offset=500ms,prio=98",
        "spike:cpu=1,every=10s,len=8s,offset=500ms,prio=98",
    ];
    let m = refused(resolve(DrainRequest::Auto, 95, &two_cpus(&long)));
    assert!(
        m.contains("spike:cpu=1,prio=98,len=8000ms,every=10000ms")
            && m.contains("SCHED_FIFO 98 on CPUs 1"),
        "{m}"
    );
    assert!(m.contains("longer than 500 ms without a break"), "{m}");
    // On one CPU only: the own threads keep the other, below the measurement.
    let c = two_cpus(&long[..1]);
    assert_eq!(resolve(DrainRequest::Auto, 95, &c).unwrap(), Some(94));
    // At most 500 ms: left out, as the default 500 us spikes always were.
    let c = two_cpus(&[
        "spike:cpu=0,every=1s,len=500ms,prio=98",
        "spike:cpu=1,every=1s,len=500ms,prio=98",
    ]);
    assert_eq!(resolve(DrainRequest::Auto, 95, &c).unwrap(), Some(1));
    // Spikes of one CPU chain (issue 39, fourth re-run): two 500 ms spikes a second, offset
    // by 500 ms, never give it back; a 90 ms spike every 100 ms stretches a rare 400 ms one
    // to seconds. Both counted; spikes with room between them are not.
    let chained = two_cpus(&[
        "spike:cpu=0,every=1s,len=500ms,offset=0ms,prio=98",
        "spike:cpu=0,every=1s,len=500ms,offset=500ms,prio=98",
        "spike:cpu=1,every=100ms,len=90ms,prio=98",
        "spike:cpu=1,every=10s,len=400ms,prio=98",
    ]);
    let m = refused(resolve(DrainRequest::Auto, 95, &chained));
    assert!(m.contains("spike:cpu=1,prio=98,len=400ms"), "{m}");
    let c = two_cpus(&[
        "spike:cpu=0,every=1s,len=200ms,prio=98",
        "spike:cpu=0,every=1s,len=200ms,offset=500ms,prio=98",
        "spike:cpu=1,every=1s,len=500ms,prio=98",
    ]);
    assert_eq!(resolve(DrainRequest::Auto, 95, &c).unwrap(), Some(1));
    // Issue 39, N19: a 500 ms spike every 500.01 ms (a 10 us gap) on each CPU held a SIGINT
    // for the whole run; a gap under 10 ms is no break, so they are refused. A 10 ms gap is one.
    let m = refused(resolve(
        DrainRequest::Auto,
        95,
        &two_cpus(&[
            "spike:cpu=0,every=500010us,len=500ms,prio=98",
            "spike:cpu=1,every=500010us,len=500ms,prio=98",
        ]),
    ));
    assert!(m.contains("a gap (every - len) under 10 ms"), "{m}");
    let c = two_cpus(&[
        "spike:cpu=0,every=501ms,len=500ms,prio=98",
        "spike:cpu=1,every=510ms,len=500ms,prio=98",
    ]);
    assert_eq!(resolve(DrainRequest::Auto, 95, &c).unwrap(), Some(94));
    let c = two_cpus(&[
        "spike:cpu=0,every=510ms,len=500ms,prio=98",
        "spike:cpu=1,every=510ms,len=500ms,prio=98",
    ]);
    assert_eq!(resolve(DrainRequest::Auto, 95, &c).unwrap(), Some(1));
    // A long spike below the measurement's priority is stayed above.
    let c = two_cpus(&[
        "spike:cpu=0,every=2s,len=1s,prio=40",
        "spike:cpu=1,every=2s,len=1s,prio=40",
    ]);
    assert_eq!(resolve(DrainRequest::Auto, 95, &c).unwrap(), Some(41));
}

/// The contention of `loads` on a 2-CPU machine as [`two_cpus`], where a load's CPUs can be
/// enforced (`bound` Ok) or not.
fn two_cpus_where(loads: &[&str], bound: std::result::Result<(), &str>) -> Contention {
    let loads: Vec<LoadSpec> = loads.iter().map(|t| load(t)).collect();
    let cpus = Cpus {
        online: &[0, 1],
        measured: &[0, 1],
        housekeeping: None,
        bound,
    };
    Contention::of_run_on(&loads, None, &[0, 1], &cpus)
}

const NO_CPUSET: &str =
    "no cgroup v1 cpuset hierarchy is mounted, and the cgroup2 cpuset controller is not enabled";

#[test]
fn an_exec_loads_cpus_count_only_where_a_cpuset_enforces_them() {
    // Issue 39, N13: `taskset -c 0` in this load took CPU 0 too, where the own threads were.
    let escaping = "exec[policy=fifo,prio=98,cpus=1]:/bin/sh";
    // Enforced: CPU 0 is the own threads', at the highest priority below the measurement.
    let c = two_cpus_where(&[escaping], Ok(()));
    assert_eq!(resolve(DrainRequest::Auto, 95, &c).unwrap(), Some(94));
    // Not enforceable: the load counts on every CPU, and the refusal says why.
    let m = refused(resolve(
        DrainRequest::Auto,
        95,
        &two_cpus_where(&[escaping], Err(NO_CPUSET)),
    ));
    // L7-g: the CPUs it is given are named, then those it counts on.
    assert!(
        m.contains("SCHED_FIFO 98 on CPUs 1, counted on CPUs 0-1)"),
        "{m}"
    );
    assert!(
        m.contains(&format!(
            "'{escaping}' counts on every CPU: its cpus= cannot be enforced here ({NO_CPUSET})"
        )),
        "{m}"
    );
    // Below the measurement, it is stayed above on every CPU.
    let low = "exec[policy=fifo,prio=50,cpus=1]:/bin/sh";
    let c = two_cpus_where(&[low], Err(NO_CPUSET));
    assert_eq!(resolve(DrainRequest::Auto, 95, &c).unwrap(), Some(51));
    assert_eq!(c.together[0][0].cpus, vec![0, 1]);
    // A built-in generator is jitterlab's code, which keeps the CPUs it is given; an exec
    // load on every CPU needs no bound; neither is said to be unenforced.
    for kept in ["cpu:prio=98,cpus=1", "exec[policy=fifo,prio=50]:/bin/sh"] {
        let c = two_cpus_where(&[kept], Err(NO_CPUSET));
        assert_eq!(c.together[0][0].unbound, None, "{kept}");
    }
    let c = two_cpus_where(&["cpu:prio=98,cpus=1"], Err(NO_CPUSET));
    assert_eq!(resolve(DrainRequest::Auto, 95, &c).unwrap(), Some(94));
    // A non-real-time exec load is no real-time load, bound or not.
    let c = two_cpus_where(&["exec[cpus=1]:/bin/sh"], Err(NO_CPUSET));
    assert!(c.together[0].is_empty());
}

#[test]
fn loads_alone_count_an_unbound_exec_load_on_every_cpu() {
    let generator = |t: &str| match load(t) {
        LoadSpec::Generator(g) => g,
        LoadSpec::Spike(_) => unreachable!(),
    };
    let loads = [generator("exec[prio=99,cpus=1]:/bin/sh")];
    let on = |bound| Cpus {
        online: &[0, 1],
        measured: &[],
        housekeeping: None,
        bound,
    };
    let c = Contention::of_loads_alone_on(&loads, &[0, 1], &on(Ok(())));
    assert_eq!(alone(&c).unwrap(), Some(99));
    let c = Contention::of_loads_alone_on(&loads, &[0, 1], &on(Err(NO_CPUSET)));
    let m = refused(alone(&c));
    assert!(m.contains("its cpus= cannot be enforced here"), "{m}");
}
