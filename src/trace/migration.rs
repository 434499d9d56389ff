//! The CPUs where the kernel may move the measuring threads' timers: traced too, for those
//! timers' expiries and wakeups only.
//!
//! A hrtimer that is not pinned is queued on the CPU `get_nohz_timer_target()` picks when timer
//! migration is on (`/proc/sys/kernel/timer_migration`, 1 by default). For a CPU that is a timer
//! housekeeping CPU and busy (a measuring thread arms its timer while it runs) that is the CPU
//! itself; for a `nohz_full` CPU it is a housekeeping CPU, and the timer goes there whenever
//! that CPU's next timer event comes no later than this timer. The measuring threads' timers
//! (their sleeps, timerfd, POSIX timers, itimers) are not pinned: on a `nohz_full` CPU some of
//! them expire on a housekeeping CPU, which then wakes the thread. Measured on Debian's 6.1
//! PREEMPT_RT kernel with `nohz_full=1`: on CPU 1, 33 of 2565 POSIX-timer wakeups had their
//! timer expire on CPU 0 (tests/data/trace/rt-moved-*).

use crate::cpulist::parse_cpu_list;

/// The housekeeping CPUs a timer armed on one of `measured` may be moved to, none of them
/// measured: every online CPU outside `nohz_full` when a measured CPU is in `nohz_full` and
/// timer migration is on (`migration`: the sysctl's value; None, unreadable: taken as on, the
/// default of kernels that have it). `nohz_full` and `online` are the kernel's CPU lists
/// (`/sys/devices/system/cpu/nohz_full`, empty or `(null)` without it, and `.../online`).
pub(crate) fn timer_cpus_from(
    measured: &[usize],
    migration: Option<i64>,
    nohz_full: &str,
    online: &str,
) -> Vec<usize> {
    moved_to(measured, migration, nohz_full, online)
        .into_iter()
        .filter(|c| !measured.contains(c))
        .collect()
}

/// Every online CPU outside `nohz_full`, where a measured `nohz_full` CPU's timers may be
/// moved while timer migration is on; none otherwise (the arguments as for
/// [`timer_cpus_from`]).
fn moved_to(
    measured: &[usize],
    migration: Option<i64>,
    nohz_full: &str,
    online: &str,
) -> Vec<usize> {
    let isolated = parse_cpu_list(nohz_full).unwrap_or_default();
    if migration == Some(0) || !measured.iter().any(|c| isolated.contains(c)) {
        return Vec::new();
    }
    let online = parse_cpu_list(online).unwrap_or_default();
    online
        .into_iter()
        .filter(|c| !isolated.contains(c))
        .collect()
}

/// The measured CPUs a timer armed on another measured CPU may be moved to: the measured CPUs
/// outside `nohz_full` when a measured CPU is in `nohz_full` and timer migration is on (the
/// arguments as for [`timer_cpus_from`]). Such a CPU is traced in full for its own measuring
/// thread; its trace also holds the expiries of the timers moved there. Lab check 1a (CPUs 0
/// and 1 measured, `nohz_full=1`, timer migration on): 289 of CPU 1's 381 samples had their
/// timer expire on CPU 0 and were left unjoined ("the timer's events are not in the trace").
pub(crate) fn measured_targets_from(
    measured: &[usize],
    migration: Option<i64>,
    nohz_full: &str,
    online: &str,
) -> Vec<usize> {
    moved_to(measured, migration, nohz_full, online)
        .into_iter()
        .filter(|c| measured.contains(c))
        .collect()
}

/// The sysctl `kernel.timer_migration`, `nohz_full` and the online CPUs, as read now.
fn system() -> (Option<i64>, String, String) {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    (
        read("/proc/sys/kernel/timer_migration").trim().parse().ok(),
        read("/sys/devices/system/cpu/nohz_full"),
        read("/sys/devices/system/cpu/online"),
    )
}

/// [`timer_cpus_from`] on this system now.
pub(crate) fn timer_cpus(measured: &[usize]) -> Vec<usize> {
    let (migration, nohz_full, online) = system();
    timer_cpus_from(measured, migration, &nohz_full, &online)
}

/// [`measured_targets_from`] on this system now.
pub(crate) fn measured_targets(measured: &[usize]) -> Vec<usize> {
    let (migration, nohz_full, online) = system();
    measured_targets_from(measured, migration, &nohz_full, &online)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_housekeeping_cpus_are_targets_of_a_measured_nohz_full_cpus_timers() {
        // Lab check 1a: CPUs 0 and 1 measured, nohz_full=1.
        assert_eq!(measured_targets_from(&[0, 1], Some(1), "1\n", "0-1\n"), [0]);
        assert_eq!(measured_targets_from(&[0, 1], None, "1\n", "0-1\n"), [0]);
        assert_eq!(
            measured_targets_from(&[0, 1], Some(0), "1\n", "0-1\n"),
            [0usize; 0]
        );
        // No measured nohz_full CPU: every timer stays where it was armed.
        assert_eq!(
            measured_targets_from(&[0, 1], Some(1), "(null)\n", "0-1\n"),
            [0usize; 0]
        );
        assert_eq!(
            measured_targets_from(&[0, 2], Some(1), "1\n", "0-3\n"),
            [0usize; 0]
        );
        // Only the nohz_full CPU measured: its targets are unmeasured (timer_cpus_from).
        assert_eq!(
            measured_targets_from(&[1], Some(1), "1\n", "0-1\n"),
            [0usize; 0]
        );
        assert_eq!(
            measured_targets_from(&[0, 1, 2, 3], Some(1), "2-3", "0-3"),
            [0, 1]
        );
    }

    #[test]
    fn housekeeping_cpus_only_for_a_measured_nohz_full_cpu_with_migration_on() {
        // The lab's RT guest: nohz_full=1, CPU 1 measured.
        assert_eq!(timer_cpus_from(&[1], Some(1), "1\n", "0-1\n"), [0]);
        // Unreadable sysctl: the kernel's default, on.
        assert_eq!(timer_cpus_from(&[1], None, "1\n", "0-1\n"), [0]);
        assert_eq!(timer_cpus_from(&[1], Some(0), "1\n", "0-1\n"), [0usize; 0]);
        // A housekeeping CPU measured keeps its timers.
        assert_eq!(timer_cpus_from(&[0], Some(1), "1\n", "0-1\n"), [0usize; 0]);
        // No nohz_full at all.
        assert_eq!(
            timer_cpus_from(&[1], Some(1), "(null)\n", "0-3\n"),
            [0usize; 0]
        );
        assert_eq!(timer_cpus_from(&[1], Some(1), "\n", "0-3\n"), [0usize; 0]);
        // Every housekeeping CPU, none measured.
        assert_eq!(
            timer_cpus_from(&[2, 5], Some(1), "4-7", "0-7"),
            [0, 1, 2, 3]
                .into_iter()
                .filter(|c| *c != 2)
                .collect::<Vec<_>>()
        );
    }
}
