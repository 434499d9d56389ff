//! docs/user-guide.md's "Input limits" table states the limits of every file and request a
//! command reads. Each expected row is built here from the constants the readers use, so a
//! changed constant fails until the table says the new value, and a reader added without its
//! row (or a row left after its reader went) fails too: the table's rows must be exactly these.

use super::{EVENTS_MAX_BYTES, RESULT_RECORD_MAX_BYTES, format_bytes};

/// The rows the table must have: its first cell, and phrases its second cell must hold.
fn expected_rows() -> Vec<(&'static str, Vec<String>)> {
    use crate::format::{counters, hlog_scan, samples};
    use crate::results::import::{MAX_BINARY_FILE_BYTES, MAX_CPUS, MAX_FILE_BYTES};
    vec![
        (
            "`import FILE`",
            vec![
                format_bytes(MAX_FILE_BYTES),
                format!(
                    "{} of a binary samples.raw",
                    format_bytes(MAX_BINARY_FILE_BYTES)
                ),
                format!("CPU numbers below {MAX_CPUS}"),
            ],
        ),
        (
            "`--scenario FILE`",
            vec![
                format_bytes(crate::load::scenario::MAX_FILE_BYTES),
                format!(
                    "{} phases",
                    crate::units::group_digits(crate::load::scenario::MAX_PHASES as u64)
                ),
            ],
        ),
        (
            "run.json, sweep.json of a result directory",
            vec![
                format!(
                    "regular files of at most {}",
                    format_bytes(RESULT_RECORD_MAX_BYTES)
                ),
                format!(
                    "at most {} JSON values",
                    crate::units::group_digits(super::json_values::RESULT_RECORD_MAX_VALUES)
                ),
                format!(
                    "at most {} strings",
                    crate::units::group_digits(super::json_values::RESULT_RECORD_MAX_STRINGS)
                ),
                format!(
                    "at most {} under `system`",
                    crate::units::group_digits(super::json_values::RESULT_RECORD_MAX_SYSTEM_VALUES)
                ),
            ],
        ),
        (
            "events.jsonl (a segmented run: its `events-NNNNNN.jsonl` files)",
            vec![
                format!(
                    "a regular file of at most {} (a segmented run's files together",
                    format_bytes(EVENTS_MAX_BYTES)
                ),
                format!(
                    "lines of at most {}",
                    format_bytes(crate::format::events::MAX_LINE_BYTES as u64)
                ),
                format!(
                    "the worst {} spike explanations ({} at most)",
                    crate::units::group_digits(
                        crate::report::events_digest::MAX_EXPLANATIONS_KEPT as u64
                    ),
                    format_bytes(crate::report::events_digest::MAX_EXPLANATION_BYTES_KEPT as u64)
                ),
                format!(
                    "({} culprits at most)",
                    crate::units::group_digits(crate::report::causes::MAX_CULPRITS as u64)
                ),
                format!(
                    "at most {} phase events",
                    crate::units::group_digits(
                        crate::report::events_digest::MAX_PHASE_EVENTS as u64
                    )
                ),
            ],
        ),
        (
            "latency.hlog (a segmented run: its `latency-NNNNNN.hlog` files), its summary",
            vec![
                format!(
                    "read in chunks of {}",
                    format_bytes(hlog_scan::CHUNK_BYTES as u64)
                ),
                format!(
                    "lines of at most {}",
                    format_bytes(hlog_scan::MAX_LINE_BYTES as u64)
                ),
                format!(
                    "{} inflated",
                    format_bytes(hlog_scan::MAX_PAYLOAD_BYTES as u64)
                ),
            ],
        ),
        (
            "samples.bin",
            vec![
                format!(
                    "a record size of {}–{} bytes",
                    samples::RECORD_BYTES,
                    samples::MAX_RECORD_BYTES
                ),
                format!(
                    "blocks of at most {}",
                    format_bytes(samples::MAX_BLOCK_PAYLOAD_BYTES as u64)
                ),
            ],
        ),
        (
            "counters.log",
            vec![
                format!(
                    "a regular file of at most {}",
                    format_bytes(counters::MAX_FILE_BYTES)
                ),
                format!(
                    "{} counters per CPU",
                    crate::units::group_digits(counters::MAX_NAMES_PER_CPU as u64)
                ),
                format!(
                    "lines of at most {}",
                    format_bytes(counters::MAX_LINE_BYTES as u64)
                ),
                format!(
                    "{} values",
                    crate::units::group_digits(counters::MAX_VALUES)
                ),
                format!(
                    "{} values",
                    crate::units::group_digits(counters::MAX_KEPT_VALUES)
                ),
            ],
        ),
        (
            "CPU numbers in lists (`--cpus`, `cpus=`, `doctor --cpus`)",
            vec![format!("0–{}", crate::cpulist::MAX_CPU)],
        ),
        (
            "`--ring-size`",
            vec![format!("16–{} samples", crate::plan::MAX_RING_SIZE)],
        ),
        (
            "a `/metrics` request (`monitor`)",
            vec![
                format!(
                    "a head of at most {}",
                    format_bytes(crate::monitor::http::MAX_REQUEST_BYTES as u64)
                ),
                format!(
                    "{} s from its accept",
                    crate::monitor::http::REQUEST_DEADLINE.as_secs()
                ),
                format!(
                    "{} connections answered at once",
                    crate::monitor::http::MAX_CONNECTIONS
                ),
            ],
        ),
    ]
}

/// The rows of the first table after `## Input limits`: (first cell, second cell).
fn table_rows() -> Vec<(String, String)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/user-guide.md");
    let text = std::fs::read_to_string(path).expect("docs/user-guide.md is readable");
    let section = text
        .split_once("\n## Input limits\n")
        .expect("docs/user-guide.md has a section `## Input limits`")
        .1;
    section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2) // the head and its rule
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split(" | ").collect();
            assert_eq!(cells.len(), 2, "a row of two cells: {l}");
            (cells[0].trim().to_string(), cells[1].trim().to_string())
        })
        .collect()
}

#[test]
fn the_input_limits_table_states_every_reader_and_its_constants() {
    let rows = table_rows();
    let expected = expected_rows();
    for (input, phrases) in &expected {
        let limit = rows
            .iter()
            .find(|(i, _)| i == input)
            .map(|(_, l)| l)
            .unwrap_or_else(|| panic!("docs/user-guide.md, Input limits: no row {input:?}"));
        for p in phrases {
            assert!(
                limit.contains(p.as_str()),
                "docs/user-guide.md, Input limits, row {input:?} should say {p:?} (the value the code uses): {limit}"
            );
        }
    }
    for (input, _) in &rows {
        assert!(
            expected.iter().any(|(i, _)| i == input),
            "docs/user-guide.md, Input limits: the row {input:?} is checked against no constant; add it to expected_rows"
        );
    }
}

#[test]
fn counts_are_grouped_as_the_guide_writes_them() {
    assert_eq!(crate::units::group_digits(16), "16");
    assert_eq!(crate::units::group_digits(10_000), "10 000");
    assert_eq!(crate::units::group_digits(268_435_456), "268 435 456");
}
