//! The fixture that report_figures.rs and reproducing.rs share: a synthetic run
//! (`results::synthetic`) given a sample log, as `run --samples` leaves one, and the check that
//! a document shows a command as the test runs it.

use jitterlab::format::run_record::RunRecord;
use jitterlab::format::samplelog::{SampleLogHeader, SampleLogWriter, SampleRecord};
use jitterlab::results::synthetic::START_MONOTONIC_NS;
use std::path::Path;

/// Gives the synthetic run in `dir` (its run.json `record`, as `write_run` returned it and the
/// test changed it) a sample log: run.json rewritten with `plan.samples` set, and samples.bin
/// holding `records`, on CLOCK_MONOTONIC from the synthetic run's start.
pub(crate) fn with_sample_log(dir: &Path, mut record: RunRecord, records: &[SampleRecord]) {
    record.plan.samples = true;
    jitterlab::results::ResultDir::open(dir)
        .unwrap()
        .write_run_record(&record)
        .unwrap();
    let mut w = SampleLogWriter::create(&dir.join("samples.bin"), Default::default()).unwrap();
    w.begin(SampleLogHeader {
        clock_id: 1,
        start_ns: START_MONOTONIC_NS,
    })
    .unwrap();
    for r in records {
        w.write(r).unwrap();
    }
    w.flush().unwrap();
}

/// docs/`doc` must show `command` as it is run here.
pub(crate) fn documented(doc: &str, command: &str) {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs").join(doc))
            .unwrap();
    assert!(
        text.contains(command),
        "docs/{doc} does not show `{command}`"
    );
}
