//! A measuring thread's timer that expired on another CPU than the one it was armed on: the
//! kernel's timer migration (see [`CpuTimeline::take_moved_cycle`] and `trace/migration.rs`).

use super::{Armed, CpuTimeline, SoftirqThread, TimerCycle, runs_softirqs};
use crate::trace::decode::Kind;

impl CpuTimeline {
    /// The timer cycle of thread `tid` for the sample due at `due_ns` (woken in user space at
    /// `wake_ns`) whose timer was armed on this CPU but expired on one of `elsewhere`.
    ///
    /// Timer migration: a timer that is not pinned goes to the CPU `get_nohz_timer_target()`
    /// picks, and for a CPU that is not a timer housekeeping CPU (`nohz_full=`) that is a
    /// housekeeping CPU, whenever that CPU's next timer event comes no later than this timer
    /// (otherwise it stays: the remote CPU's clock event could not be reprogrammed in time).
    /// The measuring thread's own hrtimer (a sleep, timerfd, POSIX timer, itimer) is not
    /// pinned, so on a `nohz_full` CPU with `kernel.timer_migration=1` some of its timers
    /// expire on a housekeeping CPU, which wakes the thread from there (its `sched_waking` is
    /// in that CPU's trace, and on its own CPU the thread is switched in with no wakeup
    /// before). The cycle is put together from the arming here, the first expiry of the same
    /// hrtimer after it on another CPU and the thread's wakeup there, and its switch in here.
    pub(crate) fn take_moved_cycle(
        &self,
        tid: i32,
        due_ns: u64,
        wake_ns: u64,
        tolerance_ns: u64,
        elsewhere: &[(usize, &CpuTimeline)],
    ) -> Option<TimerCycle> {
        let due = due_ns as i64;
        let fits = |a: &Armed| {
            a.tid == tid && a.softexpires >= due && a.softexpires - due <= tolerance_ns as i64
        };
        let &(hrtimer, first) = self.arms.iter().find(|(_, a)| fits(a))?;
        let (cpu, remote, expiry) = elsewhere
            .iter()
            .filter_map(|&(cpu, tl)| {
                let e = tl.history.iter().find(|e| {
                    e.ts >= first.ts
                        && e.ts <= wake_ns
                        && matches!(e.kind, Kind::HrtimerExpire { hrtimer: h, .. } if h == hrtimer)
                })?;
                Some((cpu, tl, e))
            })
            .min_by_key(|(_, _, e)| e.ts)?;
        let Kind::HrtimerExpire { now, .. } = expiry.kind else {
            return None;
        };
        // The last arming of this timer for this sample before it expired (a thread may
        // re-arm it with the same expiry).
        let (_, a) = self
            .arms
            .iter()
            .rev()
            .find(|(h, a)| *h == hrtimer && fits(a) && a.ts <= expiry.ts)?;
        let expired_in = remote
            .history
            .iter()
            .take_while(|e| e.ts <= expiry.ts)
            .filter_map(|e| match e.kind {
                Kind::Waking { task, .. }
                    if task.pid == expiry.common_pid && runs_softirqs(&task.comm) =>
                {
                    Some(SoftirqThread {
                        thread: task,
                        woken_ts: e.ts,
                        expiry_ts: expiry.ts,
                    })
                }
                _ => None,
            })
            .last();
        let waking_ts = remote
            .history
            .iter()
            .find(|e| {
                e.ts >= expiry.ts
                    && e.ts <= wake_ns
                    && matches!(e.kind, Kind::Waking { task, .. } if task.pid == tid)
            })
            .map(|e| e.ts);
        let switch_in_ts = waking_ts.and_then(|w| {
            self.history
                .iter()
                .find(|e| {
                    e.ts >= w
                        && e.ts <= wake_ns
                        && matches!(e.kind, Kind::Switch { next, .. } if next.pid == tid)
                })
                .map(|e| e.ts)
        });
        Some(TimerCycle {
            tid,
            hrtimer,
            expires: a.expires,
            softexpires: a.softexpires,
            armed_ts: a.ts,
            expiry_ts: expiry.ts,
            now,
            waking_ts,
            switch_in_ts,
            // Woken on another CPU: never from its own context.
            woken_running: false,
            expired_in,
            expired_on: Some(cpu),
        })
    }
}
