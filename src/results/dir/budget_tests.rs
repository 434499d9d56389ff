//! run.json's value budget (issue 39, `format::record_budget`): a record of many CPUs, each
//! thread with its spike times, is written within the budget and read back by its own reader.

use super::*;
use crate::format::record_budget::RUN_RECORD_WRITTEN_MAX_VALUES;
use crate::format::tails::SpikeRecord;
use crate::input::json_values::{RESULT_RECORD_MAX_VALUES, count_values};
use crate::results::synthetic::{SyntheticRun, write_run};

/// A synthetic run's record on `cpus` (its files written under `dir`), to give spike lists.
fn synthetic_record(dir: &Path, cpus: Vec<usize>, seed: u64) -> RunRecord {
    let run = SyntheticRun {
        cpus,
        interval_ns: 1_000_000,
        log_interval_ns: 1_000_000_000,
        duration_ns: 1_000_000_000,
        phases: vec![],
        loads: vec![],
        warnings: vec![],
        seed,
    };
    write_run(dir, &run, |_, _, _| 10_000).unwrap()
}

/// A spike list of `count` spikes over `threshold_ns` holding `times_ns`, over an hour.
fn spike_list(basis: &str, threshold_ns: u64, count: u64, times_ns: Vec<u64>) -> SpikeRecord {
    SpikeRecord {
        threshold_ns,
        basis: basis.into(),
        count,
        count_is_lower_bound: false,
        resolution_ns: 1,
        exposure_ns: 3_600_000_000_000,
        rate_per_hour: count as f64,
        rate_per_hour_low: 0.0,
        rate_per_hour_high: count as f64 * 2.0,
        mtbf_ns: Some(3_600_000_000_000 / count.max(1)),
        period_ns: None,
        period_share: None,
        times_ns,
        times_omitted: 0,
        not_counted: None,
    }
}

/// A 1024-CPU run whose threads each have 3 spike lists (20, 8 000 and 8 000 of 8 500 spike
/// times: 16.4 million times, with the rest of the record more than the reader's 16 777 216
/// values): before the budget its run.json was refused by `read_run_record`; now it reads back,
/// every count as counted, each list saying how many times it omits.
#[test]
fn a_record_of_1024_cpus_with_their_spike_times_reads_back() {
    const CPUS: usize = 1024;
    const THRESHOLDS: usize = 3;
    const TIMES: u64 = 8_000;
    let base = tempfile::tempdir().unwrap();
    let mut record = synthetic_record(&base.path().join("one"), vec![0], 1);
    let mut thread = record.threads[0].clone();
    let counted = |basis: &str, threshold_ns: u64, count: u64| {
        let times = (0..count.min(TIMES)).map(|k| k * 1_000_000).collect();
        spike_list(basis, threshold_ns, count, times)
    };
    // One list of a few spikes (kept whole), the rest long; one counts more spikes than it
    // has times (as past SPIKE_TIMES_KEPT).
    thread.tails.spikes = vec![
        counted("deadline", 1_000_000, 20),
        counted("budget", 2_000_000, TIMES),
        counted("10x median", 3_000_000, TIMES + 500),
    ];
    assert_eq!(thread.tails.spikes.len(), THRESHOLDS);
    record.threads = (0..CPUS)
        .map(|cpu| {
            let mut t = thread.clone();
            t.cpu = cpu;
            t
        })
        .collect();
    let times: u64 = (CPUS as u64) * (20 + 2 * TIMES);
    assert!(
        times > RESULT_RECORD_MAX_VALUES - RESULT_RECORD_MAX_VALUES / 8,
        "the record is near or over the reader's cap without the budget"
    );
    let dir = ResultDir::create(&base.path().join("big"), "--out")
        .unwrap()
        .keep();
    dir.write_run_record(&record).unwrap();
    let text = fs::read(dir.file(RUN_JSON)).unwrap();
    let values = count_values(&text);
    assert!(
        values <= RUN_RECORD_WRITTEN_MAX_VALUES,
        "{values} values written"
    );
    let back = dir.read_run_record().unwrap();
    assert_eq!(back.threads.len(), CPUS);
    let mut kept = 0;
    for t in &back.threads {
        let [few, long, longer] = &t.tails.spikes[..] else {
            panic!("{} spike lists", t.tails.spikes.len());
        };
        // Every count as counted; every list its first times; what is not there, said.
        assert_eq!(
            (few.count, few.times_ns.len(), few.times_omitted),
            (20, 20, 0)
        );
        for (s, count) in [(long, TIMES), (longer, TIMES + 500)] {
            assert_eq!(s.count, count);
            assert!(s.times_ns.len() < TIMES as usize, "{}", s.times_ns.len());
            assert_eq!(s.times_ns.len() as u64 + s.times_omitted, count);
            assert_eq!(s.times_ns.first(), Some(&0));
            kept += s.times_ns.len() as u64;
        }
        assert_eq!(long.times_ns.len(), longer.times_ns.len(), "an equal share");
    }
    // As many as fit: the budget is used, not wasted (the rest of the record is small).
    assert!(kept > RUN_RECORD_WRITTEN_MAX_VALUES * 9 / 10, "{kept} kept");
    // A record within the budget is written as it is, a short list whole: no `times_omitted`.
    dir.write_run_record(&back).unwrap();
    let small = ResultDir::create(&base.path().join("small"), "--out")
        .unwrap()
        .keep();
    record.threads.truncate(2);
    for t in &mut record.threads {
        t.tails.spikes.truncate(2);
        t.tails.spikes[1] = counted("budget", 2_000_000, 30);
    }
    small.write_run_record(&record).unwrap();
    let back = small.read_run_record().unwrap();
    assert_eq!(back.threads[0].tails.spikes[1].times_ns.len(), 30);
    let text = fs::read_to_string(small.file(RUN_JSON)).unwrap();
    assert!(
        !text.contains("times_omitted"),
        "nothing omitted, nothing said"
    );
}

/// `--retain-size` caps run.json's spike times together at an eighth of the limit (a
/// monitor's noisy machine filled a 64 KiB limit with 38 KB of times and retention deleted the
/// latency history): a 64 KiB limit keeps at most 64 KiB / 8 / 34 bytes = 240 times, each
/// list its first ones, every count as counted and the omitted times said; the times take
/// no more than an eighth of the limit in the text. Without a size limit the same lists are
/// written whole.
#[test]
fn a_size_limit_keeps_spike_times_to_an_eighth_of_it() {
    const LIMIT: u64 = 64 * 1024;
    const TIMES: u64 = 1_000;
    let base = tempfile::tempdir().unwrap();
    let mut record = synthetic_record(&base.path().join("one"), vec![0, 1], 2);
    // Times of 19 digits, the widest a run of a year writes.
    let list = |threshold_ns: u64| {
        let times = (0..TIMES).map(|k| 1_000_000_000_000_000_000 + k).collect();
        spike_list("budget", threshold_ns, TIMES, times)
    };
    for t in &mut record.threads {
        t.tails.spikes = vec![list(1_000_000), list(2_000_000)];
    }
    let segments = |retain_bytes: Option<u64>| crate::format::segments::SegmentsRecord {
        length_ns: 1_000_000_000,
        retain: if retain_bytes.is_some() {
            "size"
        } else {
            "forever"
        }
        .into(),
        retain_ns: None,
        retain_bytes,
        files: vec![],
        deleted: 0,
    };
    let written = |name: &str, retain_bytes: Option<u64>| {
        let mut r = record.clone();
        r.segments = Some(segments(retain_bytes));
        let dir = ResultDir::create(&base.path().join(name), "--out")
            .unwrap()
            .keep();
        dir.write_run_record(&r).unwrap();
        let text = fs::read_to_string(dir.file(RUN_JSON)).unwrap();
        (dir.read_run_record().unwrap(), text)
    };
    let (capped, text) = written("capped", Some(LIMIT));
    let lists: Vec<&SpikeRecord> = capped
        .threads
        .iter()
        .flat_map(|t| t.tails.spikes.iter())
        .collect();
    assert_eq!(lists.len(), 4);
    let kept: u64 = lists.iter().map(|s| s.times_ns.len() as u64).sum();
    assert!(kept <= LIMIT / 8 / 34, "{kept} times kept");
    assert!(
        kept >= LIMIT / 8 / 34 - 4,
        "the share is used: {kept} times kept"
    );
    for s in &lists {
        assert_eq!(s.count, TIMES, "every spike counted");
        assert_eq!(s.times_ns.len() as u64 + s.times_omitted, TIMES);
        assert_eq!(s.times_ns.first(), Some(&1_000_000_000_000_000_000));
        assert_eq!(s.times_ns.len(), lists[0].times_ns.len(), "an equal share");
    }
    // The times' own lines in the text: no more than an eighth of the limit.
    let time_bytes: usize = text
        .lines()
        .filter(|l| {
            l.trim()
                .trim_end_matches(',')
                .starts_with("1000000000000000")
        })
        .map(|l| l.len() + 1)
        .sum();
    assert!(
        time_bytes as u64 <= LIMIT / 8,
        "{time_bytes} bytes of times"
    );
    let (whole, _) = written("whole", None);
    for t in &whole.threads {
        for s in &t.tails.spikes {
            assert_eq!((s.times_ns.len() as u64, s.times_omitted), (TIMES, 0));
        }
    }
}
