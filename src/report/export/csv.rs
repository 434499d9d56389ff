//! CSV: one row per sample, units in the header names. A noise run's rows are gaps: `start_ns`
//! (the read before the gap), `gap_ns`, and `throttled` (1 for a gap taken as RT throttling).
//!
//! A wakeup run's rows end with FirmTimers' times (`measure_latency`, 000_4ed3db056085d9dd.txt,
//! Appendix A: "the time when the process begins to sleep, when it asks to be woken up, and
//! when it really wakes up, plus the latency"): `sleep_start_ns` and `wake_ns`, on the run's
//! clock, derived from the samples and run.json's plan (see [`SleepTimes`]).

use super::exporter::{Pacing, SampleExporter, SampleRun};
use crate::format::samplelog::SampleRecord;
use crate::measure::wake::Schedule;
use std::collections::BTreeMap;
use std::io::{self, Write};

/// The columns a wakeup run's rows gain after the kind's header.
pub(crate) const SLEEP_COLUMNS: &str = "sleep_start_ns,wake_ns";

#[derive(Default)]
pub(crate) struct Csv {
    /// Set by the header for a periodic kind (a wakeup run): its rows end with the sleep
    /// start and the wake time.
    times: Option<SleepTimes>,
}

impl SampleExporter for Csv {
    fn header(&mut self, out: &mut dyn Write, run: &SampleRun) -> io::Result<()> {
        let words = run.kind.words();
        if !run.kind.spec().periodic {
            return writeln!(out, "{}", words.csv_header);
        }
        self.times = Some(SleepTimes::new(run.pacing.clone()));
        writeln!(out, "{},{SLEEP_COLUMNS}", words.csv_header)
    }

    fn row(&mut self, out: &mut dyn Write, s: &SampleRecord, start_ns: u64) -> io::Result<()> {
        let irq = s.irq_latency_ns.map_or(String::new(), |v| v.to_string());
        let t = s.expected_ns.saturating_sub(start_ns) as f64 / 1e9;
        write!(
            out,
            "{},{},{},{:.9},{},{},{}",
            s.cpu, s.seq, s.expected_ns, t, s.latency_ns, irq, s.missed
        )?;
        match &mut self.times {
            None => writeln!(out),
            Some(times) => {
                let (sleep, wake) = times.of(s);
                let cell = |v: Option<i128>| v.map_or(String::new(), |v| v.to_string());
                writeln!(out, ",{},{}", cell(sleep), cell(wake))
            }
        }
    }
}

/// The sleep start and the wake time of each sample, derived, never guessed.
///
/// The measuring loop reads the clock once per wakeup (`measure/cycle.rs`): the wake time is
/// that read, due time plus latency, for every method whose latency counts from the due time
/// (not the IPC methods, whose latency counts from the sender's clock read, which the sample
/// log does not keep: their cells are empty). The loop goes back to sleep after that read
/// without another: the sleep before wakeup k starts after wakeup k-1's read (a relative
/// method computes its due time from that very read). So `sleep_start_ns` is the previous
/// wakeup's wake time, when that record is in the log and the due time is the one the loop
/// computes from it (the same grid, or that read plus the period): a dropped record, a due
/// time moved by the starvation guard, or an unknown method leaves it empty. The first
/// wakeup's sleep starts at its due time minus the period for a relative method (the read it
/// was computed from); an absolute method's first sleep starts after the thread's setup,
/// which reads no clock: empty.
pub(crate) struct SleepTimes {
    pacing: Option<Pacing>,
    /// Per CPU, its previous record: seq, due time, periods missed, wake time.
    last: BTreeMap<u32, (u64, u64, u32, i128)>,
}

impl SleepTimes {
    pub(crate) fn new(pacing: Option<Pacing>) -> Self {
        SleepTimes {
            pacing,
            last: BTreeMap::new(),
        }
    }

    /// (sleep start, wake time) of `s`, ns on the run's clock; None where not known.
    pub(crate) fn of(&mut self, s: &SampleRecord) -> (Option<i128>, Option<i128>) {
        let Some(p) = &self.pacing else {
            return (None, None);
        };
        let (Some(schedule), Some(&interval)) = (p.schedule, p.interval_ns.get(&s.cpu)) else {
            return (None, None);
        };
        if schedule == Schedule::Sender {
            return (None, None);
        }
        let wake = i128::from(s.expected_ns) + i128::from(s.latency_ns);
        // The period before wakeup `seq` (the loop adds the step after every wakeup).
        let period = |seq: u64| i128::from(interval) + i128::from(p.step_ns) * i128::from(seq);
        let previous = self
            .last
            .insert(s.cpu, (s.seq, s.expected_ns, s.missed, wake));
        let due = i128::from(s.expected_ns);
        let sleep = match previous {
            None if s.seq == 0 && schedule == Schedule::Relative => Some(due - period(0)),
            Some((seq, prev_due, missed, prev_wake)) if seq + 1 == s.seq => {
                let computed = match schedule {
                    Schedule::Relative => prev_wake + period(s.seq),
                    _ => {
                        i128::from(prev_due)
                            + period(seq) * (i128::from(missed) + 1)
                            + i128::from(p.step_ns)
                    }
                };
                (computed == due).then_some(prev_wake)
            }
            _ => None,
        };
        (sleep, Some(wake))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(seq: u64, expected_ns: u64, latency_ns: i64, missed: u32) -> SampleRecord {
        SampleRecord {
            cpu: 0,
            missed,
            seq,
            expected_ns,
            latency_ns,
            irq_latency_ns: None,
        }
    }

    fn pacing(schedule: Schedule, step_ns: u64) -> Option<Pacing> {
        Some(Pacing {
            schedule: Some(schedule),
            interval_ns: [(0, 1_000_000)].into(),
            step_ns,
        })
    }

    /// The loop's own arithmetic (cycle.rs): an absolute grid, with a missed period and a step.
    #[test]
    fn absolute_sleeps_start_at_the_previous_wake() {
        let mut t = SleepTimes::new(pacing(Schedule::Absolute, 100_000));
        // Due 10 ms; period 1 ms, then 1.1 ms, 1.2 ms...
        assert_eq!(
            t.of(&record(0, 10_000_000, 20_000, 0)),
            (None, Some(10_020_000))
        );
        // Wakeup 1 due 10 ms + 1 ms + 0.1 ms; 2.5 ms late: 2 periods of 1.1 ms missed.
        assert_eq!(
            t.of(&record(1, 11_100_000, 2_500_000, 2)),
            (Some(10_020_000), Some(13_600_000))
        );
        // Wakeup 2: 11.1 + 1.1 x 3 + 0.1 = 14.5 ms.
        assert_eq!(
            t.of(&record(2, 14_500_000, 5_000, 0)),
            (Some(13_600_000), Some(14_505_000))
        );
        // A dropped record (seq 3 missing): not known.
        assert_eq!(t.of(&record(4, 17_200_000, 1_000, 0)).0, None);
        // A due time off the grid (the starvation guard moved it): not known.
        assert_eq!(t.of(&record(5, 99_000_000, 1_000, 0)).0, None);
    }

    #[test]
    fn relative_sleeps_start_at_the_read_their_due_time_came_from() {
        let mut t = SleepTimes::new(pacing(Schedule::Relative, 0));
        assert_eq!(
            t.of(&record(0, 10_000_000, 50_000, 0)),
            (Some(9_000_000), Some(10_050_000))
        );
        assert_eq!(
            t.of(&record(1, 11_050_000, 7_000, 0)),
            (Some(10_050_000), Some(11_057_000))
        );
        // Not the previous read plus the period: empty.
        assert_eq!(t.of(&record(2, 12_000_000, 7_000, 0)).0, None);
    }

    #[test]
    fn unknown_methods_and_senders_leave_both_empty() {
        let mut t = SleepTimes::new(pacing(Schedule::Sender, 0));
        assert_eq!(t.of(&record(0, 10_000_000, 50_000, 0)), (None, None));
        let mut t = SleepTimes::new(None);
        assert_eq!(t.of(&record(0, 10_000_000, 50_000, 0)), (None, None));
    }
}
