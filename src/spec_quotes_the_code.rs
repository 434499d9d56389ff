//! The documents state each constant as the code has it: docs/result-format.md, the
//! specification other tools are written against, and the user guide's "Input limits" table
//! ([`input_limits`]). Each check builds the sentence from the constant, so a changed constant
//! fails here until the document says the new value. A test of the whole crate, in no layer
//! (tests/offline/layers.rs): it quotes the constants of every layer.
//!
//! One concern (issue 41's near-limit files): every check is a document quoting a constant, and
//! the user guide's limits table is already a module of its own (`input_limits`).

use crate::format::{FORMAT, samples};
use crate::input::{EVENTS_MAX_BYTES, RESULT_RECORD_MAX_BYTES, format_bytes};

/// The document with every run of whitespace made one space, so that a quoted phrase may wrap.
fn spec() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/result-format.md");
    let text = std::fs::read_to_string(path).expect("docs/result-format.md is readable");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn assert_quotes(spec: &str, phrase: &str) {
    assert!(
        spec.contains(phrase),
        "docs/result-format.md should say {phrase:?} (the value the code uses)"
    );
}

#[test]
fn the_counter_names_caps() {
    use crate::format::counters::{MAX_NAME_BYTES, MAX_NAMES_BYTES};
    let spec = spec();
    assert_quotes(&spec, &format!("A name is at most {MAX_NAME_BYTES} bytes"));
    assert_quotes(
        &spec,
        &format!(
            "the distinct names of all CPUs take at most {}",
            format_bytes(MAX_NAMES_BYTES as u64)
        ),
    );
}

#[test]
fn the_summaries() {
    use crate::format::summary::{BUCKET_NS, FILE_SUFFIX, P99_SUFFIX, file_name};
    let spec = spec();
    assert_quotes(
        &spec,
        &format!("merged into buckets of {BUCKET_NS} ns (one minute)"),
    );
    assert_quotes(
        &spec,
        &format!("`floor((start + length / 2) / {BUCKET_NS} ns)`"),
    );
    assert_quotes(
        &spec,
        &format!("named after it with `{FILE_SUFFIX}` appended"),
    );
    assert_quotes(&spec, &format!("`{}`", file_name("latency.hlog")));
    assert_quotes(
        &spec,
        &format!("followed by `{P99_SUFFIX}` (`cpu0{P99_SUFFIX}`)"),
    );
    assert_quotes(
        &spec,
        &format!("<bytes> bytes, buckets of {BUCKET_NS} ns]`"),
    );
    assert_quotes(
        &spec,
        &format!(
            "(`report` {}, the others {})",
            crate::report::digest::CELLS,
            crate::results::loaded::MAX_INTERVALS_PER_TAG
        ),
    );
}

#[test]
fn the_format_version() {
    let spec = spec();
    assert_quotes(&spec, &format!("# Result directory, format {FORMAT}"));
    assert_quotes(&spec, &format!("| `format` | integer | — | `{FORMAT}` |"));
    assert_quotes(
        &spec,
        &format!("| `format` | integer | {FORMAT}, as run.json |"),
    );
}

#[test]
fn the_drain_period_and_what_it_bounds() {
    let spec = spec();
    let ms = crate::session::DRAIN_EVERY.as_millis();
    assert_quotes(
        &spec,
        &format!("the recorder (every {ms} ms) drains the rings"),
    );
    assert_quotes(
        &spec,
        &format!("spike injections within {ms} ms of their end"),
    );
    assert_quotes(
        &spec,
        &format!("injections that ended in the last ~{ms} ms may be missing"),
    );
    assert_quotes(
        &spec,
        &format!("spike injections up to {ms} ms after they end"),
    );
}

#[test]
fn the_sample_log_layout() {
    let spec = spec();
    let magic = std::str::from_utf8(samples::MAGIC).unwrap();
    let (header, record) = (samples::HEADER_BYTES, samples::RECORD_BYTES);
    let magic2 = std::str::from_utf8(samples::MAGIC_V2).unwrap();
    assert_quotes(
        &spec,
        &format!("A {header}-byte header, then the body in one of two formats"),
    );
    assert_quotes(&spec, &format!("`samples.bin` its {header}-byte header"));
    assert_quotes(&spec, &format!("Header, {header} bytes:"));
    assert_quotes(
        &spec,
        &format!("magic `{magic2}` (ASCII) for format 2, `{magic}` for format 1"),
    );
    assert_quotes(
        &spec,
        &format!("record size in bytes: {record} in format {FORMAT}"),
    );
    assert_quotes(&spec, &format!("Record, {record} bytes:"));
    assert_quotes(
        &spec,
        &format!(
            "refuse a record size below {record}, and above {}",
            samples::MAX_RECORD_BYTES
        ),
    );
    assert_quotes(
        &spec,
        &format!("use the first {record} bytes and skip the rest"),
    );
    assert_eq!(samples::NO_IRQ_LATENCY, i64::MIN);
    assert_quotes(&spec, "`i64::MIN` (0x8000000000000000) = absent");
    assert_quotes(
        &spec,
        &format!(
            "`samples.bin` is buffered ({})",
            format_bytes(samples::WRITE_BUFFER_BYTES as u64)
        ),
    );
}

#[test]
fn the_sample_log_format_2() {
    use samples::*;
    let spec = spec();
    assert_quotes(
        &spec,
        &format!("A block header is {BLOCK_HEADER_BYTES} bytes"),
    );
    let payload = format_bytes(BLOCK_PAYLOAD_BYTES as u64);
    assert_quotes(&spec, &format!("keeps a payload within {payload}"));
    assert_quotes(&spec, &format!("before its payload would exceed {payload}"));
    assert_quotes(
        &spec,
        &format!(
            "its payload size is at most {}",
            format_bytes(MAX_BLOCK_PAYLOAD_BYTES as u64)
        ),
    );
    for (bit, field) in [
        (TAG_CPU, "varint: `cpu`"),
        (TAG_SEQ_GAP, "zigzag varint: `seq` − predicted seq"),
        (
            TAG_DUE_OFF_GRID,
            "zigzag varint: `expected_ns` − predicted due time",
        ),
        (TAG_MISSED, "varint: `missed`"),
        (TAG_IRQ, "zigzag varint: `irq_latency_ns`"),
    ] {
        assert_quotes(&spec, &format!("| {bit:#04x} | {field} |"));
    }
    assert_eq!(TAG_KNOWN, 0x1f);
    assert_quotes(&spec, &format!("Tag bits above {TAG_IRQ:#04x} are zero"));
}

#[test]
fn the_run_record_reserve_and_the_read_caps() {
    let spec = spec();
    let reserve = format_bytes(crate::results::dir::FINAL_RECORD_RESERVE_BYTES as u64);
    assert_quotes(&spec, &format!("{reserve} are reserved after its end"));
    assert_quotes(
        &spec,
        &format!(
            "run.json and sweep.json of at most {}",
            format_bytes(RESULT_RECORD_MAX_BYTES)
        ),
    );
    assert_quotes(
        &spec,
        &format!("events.jsonl of at most {}", format_bytes(EVENTS_MAX_BYTES)),
    );
}

#[test]
fn the_figures_of_run_json() {
    let spec = spec();
    assert_quotes(
        &spec,
        &format!(
            "stack touched by each measuring thread before measuring: {}",
            crate::plan::PREFAULT_STACK_BYTES
        ),
    );
    assert_quotes(
        &spec,
        &format!(
            "an HDR histogram with {} significant digits",
            crate::format::stats::HISTOGRAM_DIGITS
        ),
    );
    assert_quotes(
        &spec,
        &format!(
            "trace came more than {} s late",
            crate::recorder::TRACE_WAIT_NS / 1_000_000_000
        ),
    );
    assert_quotes(
        &spec,
        &format!(
            "the {} worst `spike_explained` records",
            crate::recorder::WORST_KEPT
        ),
    );
}

#[test]
fn the_segment_layout() {
    use crate::format::segments::{FILE_PREFIX, FILE_SUFFIX, INDEX_DIGITS, file_name};
    let spec = spec();
    assert_quotes(
        &spec,
        &format!(
            "Segment k is `{FILE_PREFIX}` followed by k in at least {INDEX_DIGITS} decimal digits (zero-padded) and `{FILE_SUFFIX}`"
        ),
    );
    assert_quotes(&spec, &format!("`{}`, `{}`", file_name(0), file_name(1)));
    assert_quotes(
        &spec,
        &format!(
            "the smallest accepted limit is {} bytes",
            crate::plan::MIN_RETAIN_BYTES
        ),
    );
}

#[test]
fn the_snapshots() {
    use crate::format::actions::{SNAPSHOT_CSV_VERSION, SNAPSHOT_TRACE_VERSION};
    let spec = spec();
    assert_quotes(
        &spec,
        &format!("`# jitterlab snapshot {SNAPSHOT_CSV_VERSION}: spike on CPU C"),
    );
    assert_quotes(
        &spec,
        &format!("`# jitterlab snapshot trace {SNAPSHOT_TRACE_VERSION}: back end bpf|tracefs;"),
    );
    assert_quotes(
        &spec,
        &format!(
            "at most {} events per CPU",
            crate::trace::recent::MAX_PER_CPU
        ),
    );
    assert_quotes(
        &spec,
        &format!(
            "the {} explanations per CPU kept for snapshots",
            crate::recorder::EXPLANATIONS_KEPT
        ),
    );
}

/// docs/user-guide.md's "Input limits" table states the limits of every file and request a
/// command reads. Each expected row is built here from the constants the readers use, so a
/// changed constant fails until the table says the new value, and a reader added without its
/// row (or a row left after its reader went) fails too: the table's rows must be exactly these.
mod input_limits {
    use crate::input::json_values;
    use crate::input::{EVENTS_MAX_BYTES, RESULT_RECORD_MAX_BYTES, format_bytes};

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
                        crate::units::group_digits(json_values::RESULT_RECORD_MAX_VALUES)
                    ),
                    format!(
                        "at most {} strings",
                        crate::units::group_digits(json_values::RESULT_RECORD_MAX_STRINGS)
                    ),
                    format!(
                        "at most {} under `system`",
                        crate::units::group_digits(json_values::RESULT_RECORD_MAX_SYSTEM_VALUES)
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
                        format_bytes(
                            crate::report::events_digest::MAX_EXPLANATION_BYTES_KEPT as u64
                        )
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
                        "{} in all",
                        crate::units::group_digits(counters::MAX_NAMES as u64)
                    ),
                    format!("names of at most {} bytes", counters::MAX_NAME_BYTES),
                    format!(
                        "{} of names in all",
                        format_bytes(counters::MAX_NAMES_BYTES as u64)
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
}
