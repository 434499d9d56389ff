//! The memory guard: loads that hold memory ([`Generator::memory_bytes_per_worker`]) are
//! refused before anything starts when, at some moment, all of them that run at the same time
//! would together take more than [`SAFE_SHARE`] of MemAvailable.
//!
//! [`Generator::memory_bytes_per_worker`]: super::generator::Generator::memory_bytes_per_worker

use super::LoadSpec;
use super::generator::GeneratorSpec;
use super::scenario::Scenario;
use super::worker_kit::mib;

/// The share of MemAvailable the memory loads may take, all workers of all the loads that run at
/// the same time together: beyond it the kernel's OOM killer comes near, and it picks a process,
/// possibly not one of ours.
pub(crate) const SAFE_SHARE: f64 = 0.5;

/// A load and when it runs, for [`check_together`].
pub(crate) struct Scheduled<'a> {
    pub spec: &'a GeneratorSpec,
    /// Where it was given, for messages (`--load`, `scenario phase 1 ('mem')`); may be empty.
    pub(crate) origin: String,
    /// Offsets from the run's start, `[start, end)`; None: the whole run.
    pub window: Option<(u64, u64)>,
}

/// The memory a load holds at once: (bytes per worker, workers); None for loads that hold
/// little. Workers are counted as `workers=` or the generator's default for no particular CPU
/// set, which is what the generators that hold memory default to anyway.
fn bytes_of(spec: &GeneratorSpec) -> Option<(u64, u64)> {
    match spec.generator.memory_bytes_per_worker() {
        0 => None,
        per_worker => Some((per_worker, spec.workers(&[]) as u64)),
    }
}

/// [`check_together`] for `jitterlab run`: its `--load` generators run for the whole run, each
/// scenario phase's loads during the phase.
pub(crate) fn check_run(loads: &[LoadSpec], scenario: Option<&Scenario>) -> Result<(), String> {
    let mut scheduled = schedule(loads, scenario);
    scheduled.retain(|l| bytes_of(l.spec).is_some());
    check_together(&scheduled)
}

/// The generators of a `jitterlab run` and when they run: its `--load` generators for the
/// whole run, each scenario phase's loads during the phase.
pub(crate) fn schedule<'a>(
    loads: &'a [LoadSpec],
    scenario: Option<&'a Scenario>,
) -> Vec<Scheduled<'a>> {
    let mut scheduled: Vec<Scheduled> = loads
        .iter()
        .filter_map(|l| match l {
            LoadSpec::Generator(g) => Some(g),
            LoadSpec::Spike(_) => None,
        })
        .map(|g| Scheduled {
            spec: g,
            origin: "--load".into(),
            window: None,
        })
        .collect();
    for (i, p) in scenario.iter().flat_map(|s| s.phases.iter().enumerate()) {
        scheduled.extend(p.loads.iter().map(|g| Scheduled {
            spec: g,
            origin: format!("scenario phase {i} ('{}')", p.label),
            window: Some((p.start_ns, p.end_ns)),
        }));
    }
    scheduled
}

/// Refuses memory loads that, at some moment, would together map more than [`SAFE_SHARE`] of
/// MemAvailable, naming them, their sum and the limit. Other loads are not counted.
pub(crate) fn check_together(loads: &[Scheduled]) -> Result<(), String> {
    if !loads.iter().any(|l| bytes_of(l.spec).is_some()) {
        return Ok(());
    }
    let available = mem_available_bytes()
        .ok_or("cannot read MemAvailable from /proc/meminfo to check the memory loads' size")?;
    check_against(loads, available)
}

/// [`check_together`] against `available` bytes.
fn check_against(loads: &[Scheduled], available: u64) -> Result<(), String> {
    let memory: Vec<(&Scheduled, u64, u64)> = loads
        .iter()
        .filter_map(|l| bytes_of(l.spec).map(|(size, workers)| (l, size, workers)))
        .collect();
    let bytes = |size: u64, workers: u64| size as u128 * workers as u128;
    let (total, peak_at) = most_at_once(
        &memory
            .iter()
            .map(|&(l, s, w)| (l.window, bytes(s, w)))
            .collect::<Vec<_>>(),
    );
    let limit = (available as f64 * SAFE_SHARE) as u64;
    if total <= limit as u128 {
        return Ok(());
    }
    let together: Vec<String> = memory
        .iter()
        .filter(|(l, ..)| match (l.window, peak_at) {
            (None, _) => true,
            (Some((from, to)), Some(t)) => from <= t && t < to,
            (Some(_), None) => false,
        })
        .map(|&(l, size, workers)| {
            let mut item = format!("'{}'", l.spec.text);
            if !l.origin.is_empty() {
                item.push_str(&format!(" ({})", l.origin));
            }
            item.push_str(&format!(": {}", mib(bytes(size, workers))));
            if workers > 1 {
                item.push_str(&format!(" ({} per worker x {workers})", mib(size as u128)));
            }
            item
        })
        .collect();
    let share = format!(
        "{:.0}% of MemAvailable ({}), i.e. above {}",
        SAFE_SHARE * 100.0,
        mib(available as u128),
        mib(limit as u128)
    );
    Err(if together.len() == 1 {
        format!(
            "memory load {} is more than {share}; a smaller size= or fewer workers= keeps the OOM killer away",
            together[0]
        )
    } else {
        format!(
            "memory loads that run at the same time take {} together, more than {share}: {}; smaller size= or fewer workers=, or scenario phases that do not overlap, keep the OOM killer away",
            mib(total),
            together.join(", ")
        )
    })
}

/// The most that `items` (each: its window, None for the whole run, and its amount) take at
/// one moment, and when (the start of the windows' peak; None when no window counts): the
/// whole run's items and the windowed ones' peak. The windows' starts and ends in time order,
/// an end before a start at the same time (a phase ending at t is stopped before the one that
/// starts at t begins). O(n log n), for scenarios of very many phases. Shared with the task
/// guard (task_guard.rs).
pub(crate) fn most_at_once(items: &[(Option<(u64, u64)>, u128)]) -> (u128, Option<u64>) {
    let whole_run: u128 = items
        .iter()
        .filter(|(w, _)| w.is_none())
        .map(|&(_, b)| b)
        .sum();
    let mut edges: Vec<(u64, bool, u128)> = items
        .iter()
        .filter_map(|&(w, b)| w.map(|(from, to)| (from, to, b)))
        .flat_map(|(from, to, b)| [(from, true, b), (to, false, b)])
        .collect();
    edges.sort_by_key(|&(t, is_start, _)| (t, is_start));
    let (mut now, mut peak, mut peak_at) = (0u128, 0u128, None);
    for (t, is_start, b) in edges {
        if is_start {
            now += b;
            if now > peak {
                (peak, peak_at) = (now, Some(t));
            }
        } else {
            now -= b;
        }
    }
    (whole_run + peak, peak_at)
}

/// MemAvailable from /proc/meminfo, in bytes.
pub(crate) fn mem_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn load(text: &str) -> GeneratorSpec {
        match LoadSpec::parse(text).unwrap() {
            LoadSpec::Generator(g) => g,
            other => panic!("{other:?}"),
        }
    }

    fn at<'a>(spec: &'a GeneratorSpec, origin: &str, window: Option<(u64, u64)>) -> Scheduled<'a> {
        Scheduled {
            spec,
            origin: origin.into(),
            window,
        }
    }

    /// With 1000 MiB available, the limit is 500 MiB.
    fn check(loads: &[Scheduled]) -> Result<(), String> {
        check_against(loads, 1000 * MIB)
    }

    #[test]
    fn one_load_above_half_of_available_memory_is_refused_naming_both() {
        let (big, two) = (load("memory:size=600M"), load("memory:size=300M,workers=2"));
        let e = check(&[at(&big, "--load", None)]).unwrap_err();
        for n in [
            "memory load 'memory:size=600M' (--load): 600.0 MiB",
            "50% of MemAvailable (1000.0 MiB), i.e. above 500.0 MiB",
        ] {
            assert!(e.contains(n), "{e}");
        }
        let e = check(&[at(&two, "", None)]).unwrap_err();
        assert!(
            e.contains("'memory:size=300M,workers=2': 600.0 MiB (300.0 MiB per worker x 2)"),
            "{e}"
        );
        check(&[at(&load("memory:size=500M"), "--load", None)]).unwrap();
    }

    #[test]
    fn loads_that_run_at_the_same_time_are_summed() {
        let (a, b, c) = (
            load("memory:size=300M"),
            load("memory:size=300M,workers=1"),
            load("memory:size=100M"),
        );
        let cpu = load("cpu:workers=2");
        // Two --load: the whole run, together.
        let e = check(&[
            at(&a, "--load", None),
            at(&cpu, "--load", None),
            at(&b, "--load", None),
        ])
        .unwrap_err();
        for n in [
            "take 600.0 MiB together",
            "'memory:size=300M' (--load): 300.0 MiB",
            "'memory:size=300M,workers=1' (--load)",
            "above 500.0 MiB",
        ] {
            assert!(e.contains(n), "{e}");
        }
        assert!(!e.contains("cpu"), "{e}");
        // A --load and a phase.
        let e = check(&[
            at(&a, "--load", None),
            at(&b, "phase 1 ('mem')", Some((5, 10))),
        ])
        .unwrap_err();
        assert!(
            e.contains("'memory:size=300M,workers=1' (phase 1 ('mem'))"),
            "{e}"
        );
        // Windows that overlap: 400 MiB from 5 to 10, 600 MiB from 15 to 20; only the loads of
        // the worst moment are named.
        let loads = [
            at(&c, "phase 0", Some((0, 10))),
            at(&a, "phase 1", Some((5, 20))),
            at(&b, "phase 2", Some((15, 30))),
        ];
        let e = check(&loads).unwrap_err();
        assert!(
            e.contains("take 600.0 MiB together")
                && e.contains("(phase 1)")
                && e.contains("(phase 2)"),
            "{e}"
        );
        assert!(!e.contains("phase 0"), "{e}");
        // One after the other, also when one ends where the next starts: fine.
        check(&[
            at(&a, "phase 0", Some((0, 10))),
            at(&b, "phase 1", Some((10, 20))),
        ])
        .unwrap();
        check(&[
            at(&c, "--load", None),
            at(&a, "phase 0", Some((0, 10))),
            at(&b, "phase 2", Some((30, 40))),
        ])
        .unwrap();
    }

    #[test]
    fn the_check_reads_available_memory() {
        let available = mem_available_bytes().unwrap();
        let g = load(&format!("memory:size={}", available / 4096 * 4096));
        let e = check_together(&[at(&g, "", None)]).unwrap_err();
        assert!(e.contains("MemAvailable") && e.contains("50%"), "{e}");
        check_together(&[at(&load("memory:size=1M"), "", None)]).unwrap();
    }
}
