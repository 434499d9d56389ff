//! run.json's value budget (issue 39): the reader refuses a record of more than
//! [`RESULT_RECORD_MAX_VALUES`] JSON values (`input::json_values`, which bounds what reading
//! one costs), so the writer keeps every record it writes within
//! [`RUN_RECORD_WRITTEN_MAX_VALUES`], well under that cap: a run on hundreds of CPUs, each
//! thread keeping up to 10 000 spike times per threshold, would otherwise write a run.json its
//! own reader refuses (1024 CPUs x 3 thresholds: 30 million times). The spike times are what
//! is cut: each list keeps its first times, every list the same number at most (lists shorter
//! than that whole), as many as fit beside the rest of the record; the counts, rates and
//! periods are those of every spike, and each list says how many of its times it omits
//! (`times_omitted`). Nothing else is cut: every other number stays as measured.

use super::run_record::RunRecord;
use super::tails::SpikeRecord;
use crate::input::json_values::RESULT_RECORD_MAX_VALUES;

/// The most JSON values the writer puts in a run.json: three quarters of what the reader
/// accepts (12 582 912), the rest a margin for what a later writer adds.
pub(crate) const RUN_RECORD_WRITTEN_MAX_VALUES: u64 = RESULT_RECORD_MAX_VALUES / 4 * 3;

/// The most JSON values a scenario run's per-phase statistics may take in run.json
/// (`phases[].threads[]`, 13 values a CPU a phase), checked before the run
/// (`load::scenario`): 8 388 608, room for 10 000 phases on 64 CPUs and 630 on 1024; the
/// writer cannot cut them as it cuts spike times (each is a statistic of its own).
pub(crate) const PHASE_VALUES_MAX: u64 = 1 << 23;

/// The JSON values of one CPU's statistics in one phase (its object, `cpu`, and the latency
/// summary's eleven fields).
pub(crate) const PHASE_VALUES_PER_CPU: u64 = 13;

/// The JSON values the per-phase statistics of `phases` phases on `cpus` CPUs take, or why
/// they would take more than run.json's budget for them.
pub(crate) fn check_phase_values(phases: usize, cpus: usize) -> Result<u64, String> {
    let values = (phases as u64)
        .saturating_mul(cpus as u64)
        .saturating_mul(PHASE_VALUES_PER_CPU);
    if values > PHASE_VALUES_MAX {
        return Err(format!(
            "{phases} phases on {cpus} measured CPUs make {} values of per-phase statistics in run.json ({PHASE_VALUES_PER_CPU} a CPU a phase), more than the {} it holds for them (its reader takes {} in all); split the scenario into several runs, or measure fewer CPUs in each",
            crate::units::group_digits(values),
            crate::units::group_digits(PHASE_VALUES_MAX),
            crate::units::group_digits(RESULT_RECORD_MAX_VALUES)
        ));
    }
    Ok(values)
}

/// The record's spike-time lists.
fn lists(record: &RunRecord) -> impl Iterator<Item = &SpikeRecord> {
    record.threads.iter().flat_map(|t| t.tails.spikes.iter())
}

/// The share of a `--retain-size` limit the spike times of run.json may take together: the
/// size bounds the whole directory, and spike times that grew with a noisy machine's late
/// wakeups (up to 10 000 a list) crowded out the latency history the limit keeps (a monitor at
/// `--retain-size 64KiB` beside 626 wakeups over 1 ms in 14 s: 38 KB of times in a 66 KB
/// run.json, and retention deleted every segment but the current one).
const RETAINED_SHARE_OF_SPIKE_TIMES: u64 = 8;

/// What one spike time takes in run.json as written (pretty JSON: its indentation, up to 20
/// digits, a comma and a newline), at most.
const BYTES_PER_SPIKE_TIME: u64 = 34;

/// The most spike times run.json may hold in all, from the record's `--retain-size` limit (an
/// eighth of it); None without a size limit.
fn times_room_of_retained_size(record: &RunRecord) -> Option<u64> {
    let bytes = record.segments.as_ref()?.retain_bytes?;
    Some(bytes / RETAINED_SHARE_OF_SPIKE_TIMES / BYTES_PER_SPIKE_TIME)
}

/// The most times a list may keep for the record, holding `values` JSON values as it is, to
/// stay within [`RUN_RECORD_WRITTEN_MAX_VALUES`] and, under `--retain-size`, within its share
/// of the limit ([`times_room_of_retained_size`]); None when every list fits whole.
fn times_cap(record: &RunRecord, values: u64) -> Option<usize> {
    let mut lengths: Vec<usize> = lists(record).map(|s| s.times_ns.len()).collect();
    let times: u64 = lengths.iter().map(|&n| n as u64).sum();
    let retained = times_room_of_retained_size(record);
    if values <= RUN_RECORD_WRITTEN_MAX_VALUES && retained.is_none_or(|r| times <= r) {
        return None;
    }
    // What the record holds besides its spike times.
    let mut room = RUN_RECORD_WRITTEN_MAX_VALUES.saturating_sub(values.saturating_sub(times));
    if let Some(retained) = retained {
        room = room.min(retained);
    }
    lengths.sort_unstable();
    // The shortest lists whole, as long as the rest can keep as many; then the same share
    // each.
    for (i, &n) in lengths.iter().enumerate() {
        let left = (lengths.len() - i) as u64;
        if (n as u64).saturating_mul(left) <= room {
            room -= n as u64;
        } else {
            return Some((room / left) as usize);
        }
    }
    None
}

/// The number of the spikes a list counts whose times it does not hold.
fn omitted(s: &SpikeRecord) -> u64 {
    if s.not_counted.is_some() {
        return 0;
    }
    s.count.saturating_sub(s.times_ns.len() as u64)
}

/// Whether [`fit`] changes the record, holding `values` JSON values as it is.
pub(crate) fn needs_fit(record: &RunRecord, values: u64) -> bool {
    times_cap(record, values).is_some() || lists(record).any(|s| s.times_omitted != omitted(s))
}

/// Keeps the record within [`RUN_RECORD_WRITTEN_MAX_VALUES`] (it holds `values` JSON values
/// as it is) by keeping fewer spike times, and sets each list's `times_omitted`.
pub(crate) fn fit(record: &mut RunRecord, values: u64) {
    let cap = times_cap(record, values);
    for s in record
        .threads
        .iter_mut()
        .flat_map(|t| t.tails.spikes.iter_mut())
    {
        if let Some(cap) = cap {
            s.times_ns.truncate(cap);
        }
        s.times_omitted = omitted(s);
    }
}
