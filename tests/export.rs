//! `jitterlab export` on a constructed result directory with known samples.

mod common;

use common::*;
use jitterlab::record::samplelog::{SampleLogHeader, SampleLogWriter, SampleRecord};

fn constructed_run() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("run.json"), "{}").unwrap();
    let mut w = SampleLogWriter::create(&dir.path().join("samples.bin")).unwrap();
    w.begin(SampleLogHeader {
        clock_id: 1,
        start_ns: 5_000_000_000,
    })
    .unwrap();
    let start = 5_000_000_000u64;
    for (cpu, seq, due_offset, latency, irq) in [
        (0u32, 0u64, 0u64, 23_600i64, None),
        (1, 0, 0, 13_679, None),
        (0, 1, 10_000_000, 1_500_000, Some(2_400i64)),
    ] {
        w.write(&SampleRecord {
            cpu,
            missed: u32::from(latency >= 1_000_000),
            seq,
            expected_ns: start + due_offset,
            latency_ns: latency,
            irq_latency_ns: irq,
        })
        .unwrap();
    }
    w.flush().unwrap();
    dir
}

#[test]
fn csv_has_units_in_the_header_and_every_sample() {
    let dir = constructed_run();
    let o = jitterlab(&["export", dir.path().to_str().unwrap(), "--format", "csv"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "cpu,seq,expected_ns,time_s,latency_ns,irq_latency_ns,missed_periods"
    );
    assert_eq!(lines[1], "0,0,5000000000,0.000000000,23600,,0");
    assert_eq!(lines[2], "1,0,5000000000,0.000000000,13679,,0");
    assert_eq!(lines[3], "0,1,5010000000,0.010000000,1500000,2400,1");
    assert_eq!(lines.len(), 4);
}

#[test]
fn columns_are_the_sh7780_three_column_text() {
    let dir = constructed_run();
    let file = dir.path().join("latency.txt");
    let o = jitterlab(&[
        "export",
        dir.path().to_str().unwrap(),
        "--format",
        "columns",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = std::fs::read_to_string(file).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "# time_s latency_us irq_latency_us");
    assert_eq!(lines[1], "0.000000 23.600000 -");
    assert_eq!(lines[2], "0.000000 13.679000 -");
    assert_eq!(lines[3], "0.010000 1500.000000 2.400000");
}

#[test]
fn export_explains_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let o = jitterlab(&["export", dir.path().to_str().unwrap(), "--format", "csv"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("not a jitterlab result directory"),
        "{}",
        text(&o)
    );
    std::fs::write(dir.path().join("run.json"), "{}").unwrap();
    let o = jitterlab(&[
        "export",
        dir.path().to_str().unwrap(),
        "--format",
        "columns",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("--samples"), "{}", text(&o));
}
