//! Importers for `jitterlab import` (the command is `commands/import.rs`): a result directory (format 1) from another tool's output, so that
//! report, compare and export work on it. One file per source format; each parses its text into
//! [`Imported`] (`imported.rs`, with the checks every source passes), using what the rt-tests
//! tools share (`rt_tests.rs`); `detect.rs` recognises the format and `write.rs` writes
//! run.json and latency.hlog.
//!
//! What the source lacks stays absent: null in run.json where the field allows it, otherwise a
//! placeholder (0, "unknown") named in `imported.absent`. The histogram becomes one whole-run
//! interval per CPU in latency.hlog, each source bucket recorded at its printed value, so that
//! counts, min and max match what the tool printed (docs/import.md).

pub(crate) mod cyclictest_hist;
pub mod cyclictest_json;
pub(crate) mod cyclictest_status;
mod detect;
mod imported;
pub(crate) mod jitterdebugger;
pub(crate) mod jitterdebugger_samples;
pub(crate) mod oslat_json;
pub(crate) mod oslat_text;
pub mod pasted;
mod rt_tests;
pub(crate) mod rteval;
mod rtla_hist;
pub(crate) mod rtla_osnoise_hist;
pub(crate) mod rtla_osnoise_top;
pub(crate) mod rtla_timerlat;
pub(crate) mod rtla_timerlat_top;
pub(crate) mod stress_ng_cyclic;
mod write;

pub use crate::format::run_record::RunKind;
pub(crate) use detect::{detect, detect_binary};
pub(crate) use imported::*;
pub(crate) use rt_tests::*;
pub(crate) use rtla_hist::NoHeaderLayout;
pub use write::summary;
pub(crate) use write::write_result;

/// Every format `jitterlab import` reads, one row each: `import --format` offers these names
/// (and `auto`, which is `detect`), and run.json's `imported.source_format` is the row's name.
///
/// The order is also the order of recognition (`detect`): the first row whose `recognise` says
/// yes is the format. A text holding several tools' marks is the first's: rteval's XML (which
/// embeds cyclictest's figures) before all, histograms before the top and status outputs that
/// their files may also carry.
pub static SOURCE_FORMATS: &[&SourceFormat] = &[
    &cyclictest_json::FORMAT,
    &oslat_json::FORMAT,
    &jitterdebugger::FORMAT,
    &rteval::FORMAT,
    &rtla_osnoise_hist::FORMAT,
    &rtla_timerlat::FORMAT,
    &cyclictest_hist::FORMAT,
    &oslat_text::FORMAT,
    &stress_ng_cyclic::FORMAT,
    &rtla_osnoise_top::FORMAT,
    &rtla_timerlat_top::FORMAT,
    &cyclictest_status::FORMAT,
    &jitterdebugger_samples::FORMAT,
];

/// A source file as its format reads it.
pub(crate) enum Input<'a> {
    /// Cleaned by [`pasted::clean`].
    Text(&'a str),
    /// The bytes as written, and the file's path.
    Bytes(&'a [u8], &'a std::path::Path),
}

/// Whether a file is binary: text outputs never hold a NUL byte, binary records nearly always
/// do (a CPU number or a small value in a wider field).
pub(crate) fn is_binary(bytes: &[u8]) -> bool {
    bytes.contains(&0)
}

/// The most CPUs a Linux kernel numbers (the largest CONFIG_NR_CPUS): a CPU number at or above
/// it is no CPU, whatever a source says.
pub(crate) const MAX_CPUS: usize = 8192;

/// Parses `input` with `format`'s importer and checks every thread against itself.
pub(crate) fn parse_checked(
    format: &'static SourceFormat,
    input: Input,
) -> std::result::Result<Imported, String> {
    checked(match (format.parse, input) {
        (Parser::Text(parse), Input::Text(text)) => parse(text)?,
        (Parser::Bytes(parse), Input::Bytes(bytes, path)) => parse(bytes, path)?,
        (Parser::Text(_), Input::Bytes(..)) => {
            return Err("it is a binary file, and this format is text".into());
        }
        (Parser::Bytes(..), Input::Text(_)) => {
            return Err("it is text, and this format is binary".into());
        }
    })
}

/// Parses output saved without its column line (rtla `--no-header`) with `format`'s reading
/// of it, the columns as `layout` names them, and checks it as [`parse_checked`] does.
pub(crate) fn parse_no_header_checked(
    format: &'static SourceFormat,
    text: &str,
    layout: &NoHeaderLayout,
) -> std::result::Result<Imported, String> {
    let no_header = format
        .no_header
        .ok_or_else(|| format!("{} output has no form without its column line", format.name))?;
    checked((no_header.parse)(text, layout)?)
}

/// Checks every thread of an import against itself and the CPU range.
fn checked(imported: Imported) -> std::result::Result<Imported, String> {
    if let Some(t) = imported.threads.iter().find(|t| t.cpu >= MAX_CPUS) {
        return Err(format!(
            "CPU {} is out of range: Linux numbers at most {MAX_CPUS} CPUs (0 to {}); the file is damaged or not what it claims",
            t.cpu,
            MAX_CPUS - 1
        ));
    }
    imported
        .threads
        .iter()
        .try_for_each(SourceThread::check)
        .map_err(|e| format!("{e}; the file contradicts itself and is not imported"))?;
    Ok(imported)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::time::Duration;

    #[test]
    fn reads_rt_tests_time_stamps() {
        let t = parse_rt_tests_time("Sun, 22 Nov 2026 13:05:23 +0000").unwrap();
        assert_eq!(
            humantime::format_rfc3339_seconds(t).to_string(),
            "2026-11-22T13:05:23Z"
        );
        let t = parse_rt_tests_time("Tue, 01 Mar 2022 01:00:00 +0100").unwrap();
        assert_eq!(
            humantime::format_rfc3339_seconds(t).to_string(),
            "2022-03-01T00:00:00Z"
        );
        assert!(parse_rt_tests_time("yesterday").is_none());
    }

    #[test]
    fn time_stamps_beyond_what_run_json_holds_are_not_read() {
        for text in [
            "Sun, 22 Nov 9999999 13:05:23 +0000",
            "Sun, 22 Nov 99999999999999999 13:05:23 +0000",
            "Fri, 31 Dec 9999 23:59:59 -0100",
            "Sun, 22 Nov 1969 13:05:23 +0000",
            "Sun, 99 Nov 2026 13:05:23 +0000",
            "Sun, 22 Nov 2026 99:05:23 +0000",
            "Sun, 22 Nov 2026 13:05:23 +99999999999999999",
        ] {
            assert!(parse_rt_tests_time(text).is_none(), "{text}");
        }
        let last = parse_rt_tests_time("Fri, 31 Dec 9999 23:59:59 +0000").unwrap();
        assert_eq!(rfc3339(last).unwrap(), "9999-12-31T23:59:59Z");
        assert_eq!(rfc3339(last + Duration::from_secs(1)), None);
        let mut warnings = Vec::new();
        let v = serde_json::json!({"start_time": "Sun, 22 Nov 9999999 13:05:23 +0000"});
        assert_eq!(rt_tests_time(&v, "start_time", &mut warnings), None);
        assert!(
            warnings[0].contains("start_time 'Sun, 22 Nov 9999999"),
            "{warnings:?}"
        );
    }

    fn histogram() -> SourceHistogram {
        SourceHistogram {
            unit_ns: 1000,
            buckets: vec![(11, 2), (12, 3)],
            overflow: 0,
            overflow_from: 400,
            count: Some(5),
            min: Some(11.0),
            mean: Some(11.6),
            max: Some(12.0),
            quantiles: Vec::new(),
            stddev: None,
        }
    }

    #[test]
    fn contradictions_are_refused() {
        assert_eq!(histogram().check(), Ok(()));
        let refused = |change: &dyn Fn(&mut SourceHistogram), needle: &str| {
            let mut h = histogram();
            change(&mut h);
            let e = h.check().unwrap_err();
            assert!(e.contains(needle), "'{needle}' not in: {e}");
        };
        refused(
            &|h| h.min = Some(50.0),
            "its min (50.0 us) is above its max (12.0 us)",
        );
        refused(&|h| h.mean = Some(20.0), "its avg (20.0 us) is outside");
        refused(
            &|h| h.max = Some(300_000.0),
            "its max (300.00 ms) is beyond the end of its histogram (400.0 us)",
        );
        refused(
            &|h| {
                h.max = Some(11.0);
                h.mean = Some(11.0);
            },
            "3 samples at 12.0 us but its max is 11.0 us",
        );
        refused(
            &|h| {
                h.overflow = 2;
                h.count = Some(7);
            },
            "2 samples are counted beyond its histogram (at or above 400.0 us), yet its max is 12.0 us",
        );
        refused(
            &|h| h.max = Some(f64::NAN),
            "its max (NaN) is not a latency",
        );
        refused(
            &|h| h.buckets.push((u64::MAX, 1)),
            "a histogram bucket at 18446744073709551615 x 1000 ns",
        );
        refused(&|h| h.overflow_from = u64::MAX, "its histogram ends at");
        // L8-e: 995 of 1000 samples at or above 400 us cannot average 11.6 us.
        refused(
            &|h| {
                h.overflow = 995;
                h.count = Some(1000);
                h.max = Some(500.0);
            },
            "its avg (11.6 us) is below what its own histogram holds: at least 398.1 us",
        );
    }

    #[test]
    fn counts_beyond_what_a_histogram_holds_are_refused_not_wrapped() {
        let mut h = histogram();
        h.buckets = vec![(11, u64::MAX / 2), (12, u64::MAX / 2)];
        h.count = None;
        assert!(
            h.in_range()
                .unwrap_err()
                .contains("more than 9223372036854775807 samples")
        );
        assert!(h.check().unwrap_err().contains("add up to more than"));
        h.buckets = vec![(11, 1)];
        h.count = Some(u64::MAX);
        assert!(
            h.check()
                .unwrap_err()
                .contains("count of 18446744073709551615")
        );
        assert_eq!(add_counts([MAX_SAMPLES, 0]), Ok(MAX_SAMPLES));
        assert!(add_counts([MAX_SAMPLES, 1]).is_err());
    }

    #[test]
    fn every_format_parses_and_checks_the_captured_files() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/import");
        for name in [
            "cyclictest.json",
            "cyclictest-hist.txt",
            "cyclictest-hist-overflow.txt",
            "cyclictest-status.txt",
            "cyclictest-status.json",
            "oslat.json",
            "oslat.txt",
            "oslat-2cpu.txt",
            "oslat-2cpu.json",
            "stress-ng-cyclic.txt",
            "jitterdebugger-results.json",
            "rteval-summary.xml",
            "rtla-timerlat-hist.txt",
            "rtla-timerlat-hist-user.txt",
        ] {
            let text = std::fs::read_to_string(dir.join(name)).unwrap();
            let imported = detect(&text)
                .and_then(|f| parse_checked(f, Input::Text(&text)))
                .unwrap();
            for t in &imported.threads {
                t.check().unwrap_or_else(|e| panic!("{name}: {e}"));
            }
            // A BOM in front changes nothing once read through crate::input.
            let path = std::env::temp_dir().join(format!("jl-bom-{}-{name}", std::process::id()));
            std::fs::write(&path, format!("\u{feff}{text}")).unwrap();
            let with_bom = crate::input::read_text(&path, MAX_FILE_BYTES).unwrap();
            std::fs::remove_file(&path).unwrap();
            assert_eq!(detect(&with_bom), detect(&text), "{name}");
        }
    }

    #[test]
    fn finds_options_in_every_spelling() {
        let args = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        for cmd in [
            "cyclictest -h400",
            "cyclictest -h 400",
            "cyclictest --histogram=400",
            "cyclictest -m --histogram 400",
        ] {
            assert_eq!(
                option_value(&args(cmd), "-h", "--histogram").as_deref(),
                Some("400"),
                "{cmd}"
            );
        }
        assert_eq!(
            option_value(&args("cyclictest -m"), "-h", "--histogram"),
            None
        );
    }

    /// Issue 23 defect 5: a cyclictest histogram whose last sample is at its printed max of
    /// 8 000 us read p90-p99.99 as 8 003 us (the top of the HDR bucket holding 8 ms) and an
    /// overflow at a max of 280 us read 280.063 us: every figure now lies within the printed
    /// [min, max]. A source without a printed max is left as the histogram reads.
    #[test]
    fn percentiles_stay_within_the_printed_min_and_max() {
        let h = SourceHistogram {
            unit_ns: 1000,
            buckets: vec![(7_999, 0), (8_000, 10)],
            overflow: 0,
            overflow_from: 8_001,
            count: Some(10),
            min: Some(8_000.0),
            mean: Some(8_000.0),
            max: Some(8_000.0),
            quantiles: Vec::new(),
            stddev: None,
        };
        assert!(
            h.histogram().value_at_quantile(0.9) > 8_000_000,
            "the defect's premise"
        );
        let s = h.summary();
        for p in [s.p50_ns, s.p90_ns, s.p99_ns, s.p999_ns, s.p9999_ns] {
            assert_eq!(p, Some(8_000_000));
        }
        let overflow = SourceHistogram {
            unit_ns: 1000,
            buckets: vec![(20, 9_990)],
            overflow: 10,
            overflow_from: 280,
            count: Some(10_000),
            min: Some(20.0),
            mean: Some(20.3),
            max: Some(280.0),
            quantiles: Vec::new(),
            stddev: None,
        };
        assert!(overflow.histogram().value_at_quantile(0.9999) > 280_000);
        let s = overflow.summary();
        assert_eq!(s.p9999_ns, Some(280_000));
        assert_eq!(
            s.p50_ns,
            Some(overflow.histogram().highest_equivalent(20_000))
        );
        let unbounded = SourceHistogram {
            max: None,
            ..h.clone()
        };
        assert_eq!(
            unbounded.summary().p9999_ns,
            Some(h.histogram().value_at_quantile(0.9999))
        );
    }

    #[test]
    fn overflow_goes_to_the_threshold_and_one_to_the_max() {
        let h = SourceHistogram {
            unit_ns: 1000,
            buckets: vec![(11, 2), (12, 3)],
            overflow: 3,
            overflow_from: 400,
            count: Some(8),
            min: Some(11.0),
            mean: Some(100.0),
            max: Some(421.0),
            quantiles: Vec::new(),
            stddev: None,
        };
        let hist = h.histogram();
        assert_eq!(hist.len(), 8);
        assert_eq!(hist.count_at(400_000), 2);
        assert_eq!(hist.count_at(421_000), 1);
        let s = h.summary();
        assert_eq!(
            (s.min_ns, s.max_ns, s.samples),
            (Some(11_000), Some(421_000), 8)
        );
        assert_eq!(s.p50_ns, Some(hist.highest_equivalent(12_000)));
    }
}
