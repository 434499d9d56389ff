//! samples.bin format 2 against format 1: the same samples read back and exported identically,
//! a log torn at any byte of its last write keeps everything before it and names the damage,
//! and a real run's log stays within 8 bytes a sample.

use crate::common;

use common::*;
use jitterlab::format::samplelog::{
    HEADER_BYTES, SampleLogFormat, SampleLogHeader, SampleLogReader, SampleLogWriter, SampleRecord,
};
use std::path::Path;

const START_NS: u64 = 7_000_000_000;
const INTERVAL_NS: u64 = 100_000;

/// What a run on two CPUs makes, with every field exercised: an absolute grid, wakeups that
/// missed periods (the grid moves on), dropped records (seq gaps), early wakeups, IRQ
/// latencies on some samples, interleaved in drain-sized runs per CPU.
fn run_like_samples() -> Vec<SampleRecord> {
    let mut out = vec![];
    let mut next = [(0u64, START_NS), (0u64, START_NS)];
    for drain in 0..40u64 {
        for cpu in 0..2u32 {
            for k in 0..25u64 {
                let (seq, due) = next[cpu as usize];
                let n = drain * 25 + k;
                let latency_ns = match n % 97 {
                    13 => 350_000, // 3 periods missed
                    50 => -120,    // early
                    _ => 3_000 + ((n * 7919 + u64::from(cpu) * 31) % 40_000) as i64,
                };
                let missed = (latency_ns.max(0) as u64 / INTERVAL_NS) as u32;
                let dropped = u64::from(n % 211 == 7);
                out.push(SampleRecord {
                    cpu,
                    missed,
                    seq: seq + dropped,
                    expected_ns: due + dropped * INTERVAL_NS,
                    latency_ns,
                    irq_latency_ns: (n % 5 == 0).then_some(1_000 + n as i64),
                });
                next[cpu as usize] = (
                    seq + dropped + 1,
                    due + dropped * INTERVAL_NS + INTERVAL_NS * (u64::from(missed) + 1),
                );
            }
        }
    }
    out
}

/// Writes `records` as a run would, flushing every `per_flush` records (an interval closing),
/// into a result directory whose run.json is a stub (export reads only samples.bin for these
/// formats).
fn write_run(dir: &Path, format: SampleLogFormat, records: &[SampleRecord], per_flush: usize) {
    std::fs::write(dir.join("run.json"), "{}").unwrap();
    let mut w = SampleLogWriter::create(&dir.join("samples.bin"), format).unwrap();
    w.begin(SampleLogHeader {
        clock_id: 1,
        start_ns: START_NS,
    })
    .unwrap();
    for chunk in records.chunks(per_flush) {
        chunk.iter().for_each(|r| w.write(r).unwrap());
        w.flush().unwrap();
    }
}

fn read_all(path: &Path) -> (Vec<SampleRecord>, Option<String>) {
    let mut reader = SampleLogReader::open(path).unwrap();
    let records = reader.by_ref().map(Result::unwrap).collect();
    (records, reader.damage().map(str::to_string))
}

#[test]
fn both_formats_hold_the_same_samples_and_export_identically() {
    let records = run_like_samples();
    let (v1, v2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_run(v1.path(), SampleLogFormat::V1, &records, 500);
    write_run(v2.path(), SampleLogFormat::V2, &records, 500);
    for dir in [&v1, &v2] {
        assert_eq!(
            read_all(&dir.path().join("samples.bin")),
            (records.clone(), None)
        );
    }
    let size = |dir: &tempfile::TempDir| {
        std::fs::metadata(dir.path().join("samples.bin"))
            .unwrap()
            .len()
            - HEADER_BYTES as u64
    };
    assert_eq!(size(&v1), 40 * records.len() as u64);
    let per_sample = size(&v2) as f64 / records.len() as f64;
    assert!(
        per_sample <= 8.0,
        "format 2: {per_sample:.2} bytes a sample"
    );
    for format in ["csv", "columns"] {
        let export = |dir: &tempfile::TempDir| {
            let o = jitterlab(&["export", dir.path().to_str().unwrap(), "--format", format]);
            assert!(o.status.success(), "{}", text(&o));
            assert!(o.stderr.is_empty(), "{}", text(&o));
            String::from_utf8(o.stdout).unwrap()
        };
        let (a, b) = (export(&v1), export(&v2));
        assert_eq!(a.lines().count(), records.len() + 1, "{format}");
        assert!(a == b, "--format {format} differs between format 1 and 2");
    }
}

/// A kill can cut the last write anywhere: at every byte of the last block (format 2) or
/// record (format 1) the reader keeps every sample before it and names the cut with its
/// offset; export exports them and warns.
#[test]
fn a_log_torn_anywhere_in_its_last_write_keeps_everything_before_it() {
    let records = run_like_samples();
    for (format, last_write, kept, what) in [
        (
            SampleLogFormat::V2,
            None,
            records.len() - 200,
            "a torn last block",
        ),
        (
            SampleLogFormat::V1,
            Some(40),
            records.len() - 1,
            "a partial last record",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("samples.bin");
        // Format 2: six blocks of 300 records and a last one of 200.
        write_run(dir.path(), format, &records, 300);
        let whole = std::fs::read(&path).unwrap();
        let last_start = match last_write {
            Some(record) => whole.len() - record,
            None => last_block_offset(&whole),
        };
        for cut in last_start..whole.len() {
            std::fs::write(&path, &whole[..cut]).unwrap();
            let (back, damage) = read_all(&path);
            assert_eq!(back, records[..kept], "{format:?} cut at byte {cut}");
            match cut == last_start {
                // A cut between writes leaves a shorter, whole log.
                true => assert_eq!(damage, None),
                false => {
                    let damage = damage.unwrap_or_else(|| panic!("{format:?} cut at {cut}"));
                    assert!(
                        damage.contains(what)
                            && damage.contains(&format!("at byte {last_start}"))
                            && damage.contains(&format!("the {kept} samples before it")),
                        "{damage}"
                    );
                }
            }
        }
        // export: every sample before the cut, and the cut named on stderr.
        std::fs::write(&path, &whole[..whole.len() - 1]).unwrap();
        let o = jitterlab(&["export", dir.path().to_str().unwrap(), "--format", "csv"]);
        assert!(o.status.success(), "{}", text(&o));
        assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), kept + 1);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            stderr.contains("warning") && stderr.contains(what),
            "{stderr}"
        );
    }
}

/// The byte offset of the last block of a whole format-2 file, walking the block headers.
fn last_block_offset(file: &[u8]) -> usize {
    let (mut at, mut last) = (HEADER_BYTES, HEADER_BYTES);
    while at < file.len() {
        last = at;
        at += 12 + u32::from_le_bytes(file[at..at + 4].try_into().unwrap()) as usize;
    }
    assert_eq!(at, file.len());
    last
}

/// A flipped bit inside a block fails its checksum: the blocks before it are kept.
#[test]
fn a_corrupt_block_is_named_and_ends_the_readable_part() {
    let records = run_like_samples();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("samples.bin");
    write_run(dir.path(), SampleLogFormat::V2, &records, 500);
    let mut file = std::fs::read(&path).unwrap();
    let second = HEADER_BYTES + 12 + u32::from_le_bytes(file[32..36].try_into().unwrap()) as usize;
    file[second + 40] ^= 0x04;
    std::fs::write(&path, &file).unwrap();
    let (back, damage) = read_all(&path);
    assert_eq!(back, records[..500]);
    let damage = damage.unwrap();
    assert!(
        damage.contains("checksum does not match") && damage.contains(&format!("byte {second}")),
        "{damage}"
    );
}

/// A real run's sample log (format 2, the default) holds every recorded sample, as run.json
/// counts them, in at most 8 bytes a sample.
#[test]
fn a_real_run_takes_at_most_8_bytes_a_sample() {
    if !realtime_available("samples_format_real_run") {
        return;
    }
    let _g = exclusive();
    let (_base, out) = temp_out();
    let o = jitterlab(&[
        "run",
        "--duration",
        "2s",
        "--interval",
        "200us",
        "--samples",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let run = run_json(&out);
    assert_eq!(
        run["plan"]["samples_format"], 2,
        "run.json names the layout"
    );
    let path = out.join("samples.bin");
    let reader = SampleLogReader::open(&path).unwrap();
    assert_eq!(reader.format(), SampleLogFormat::V2);
    let (records, damage) = read_all(&path);
    assert_eq!(damage, None);
    for cpu in online_cpus() {
        let n = records.iter().filter(|r| r.cpu as usize == cpu).count();
        assert_eq!(n as u64, thread(&run, cpu)["samples"].as_u64().unwrap());
    }
    let bytes = std::fs::metadata(&path).unwrap().len() - HEADER_BYTES as u64;
    let per_sample = bytes as f64 / records.len() as f64;
    assert!(
        per_sample <= 8.0,
        "{per_sample:.2} bytes a sample over {} samples",
        records.len()
    );
}
