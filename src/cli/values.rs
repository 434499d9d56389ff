//! The value parsers of the options: text to a whole number, with the words of what the option
//! accepts, and names to rows of the tables they come from (wake methods, clocks, policies,
//! export and import formats), so that `--help` lists exactly the table's entries.

use super::ImportFormat;
use crate::format::samples::SampleLogFormat;
use crate::measure::PolicyKind;
use crate::measure::clock::{CLOCKS, Clock};
use crate::measure::wake::{WAKE_METHODS, WakeMethod};
use crate::plan::TraceBackendChoice;
use crate::plan::build::{MEASURED_KINDS, MeasuredKindRow};
use crate::report::export::{ExportFormat, FORMATS as EXPORT_FORMATS};
use crate::results::import::{SOURCE_FORMATS, SourceFormat};
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

/// A whole number for an option whose type is an integer; `accepted` says what the option takes
/// (its range is checked in [`crate::commands::run::resolve`] with the same words). clap prints
/// the result as "invalid value '-1' for '--loops <N>': ...".
fn whole_number<T: TryFrom<i128>>(text: &str, accepted: &str) -> Result<T, String> {
    text.trim()
        .parse::<i128>()
        .ok()
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| format!("'{text}' is not {accepted}"))
}

pub(super) fn loops_value(text: &str) -> Result<u64, String> {
    whole_number(
        text,
        "a number of wakeups per thread, 1 or more (e.g. 10000)",
    )
}

pub(super) fn summary_every_value(text: &str) -> Result<u64, String> {
    match whole_number(
        text,
        "a number of samples per summary, 1 or more (e.g. 1000)",
    ) {
        Ok(0) => Err("0 samples make no summary; give 1 or more (e.g. 1000)".into()),
        other => other,
    }
}

pub(super) fn priority_value(text: &str) -> Result<i32, String> {
    whole_number(
        text,
        "a priority: 1 to 99 for --policy fifo and rr, 0 for the others",
    )
}

pub(super) fn ring_size_value(text: &str) -> Result<usize, String> {
    whole_number(
        text,
        &format!(
            "a number of samples from 16 to {}",
            crate::plan::MAX_RING_SIZE
        ),
    )
}

/// `--samples-format`: a format number of samples.bin.
pub(super) fn samples_format_value() -> impl TypedValueParser<Value = SampleLogFormat> {
    PossibleValuesParser::new(["1", "2"]).map(|n| match n.as_str() {
        "1" => SampleLogFormat::V1,
        _ => SampleLogFormat::V2,
    })
}

/// `--wake`: the names and help of the wake-method table.
pub(super) fn wake_value() -> impl TypedValueParser<Value = &'static WakeMethod> {
    PossibleValuesParser::new(
        WAKE_METHODS
            .iter()
            .map(|m| PossibleValue::new(m.name).help(m.help)),
    )
    .map(|name| WakeMethod::named(&name).expect("clap admits only the table's names"))
}

/// `run --kind`: the kinds of the measured kinds' table (`plan::build::MEASURED_KINDS`).
pub(super) fn measured_kind_value() -> impl TypedValueParser<Value = &'static MeasuredKindRow> {
    PossibleValuesParser::new(
        MEASURED_KINDS
            .iter()
            .map(|k| PossibleValue::new(k.name).help(k.help)),
    )
    .map(|name| MeasuredKindRow::named(&name).expect("clap admits only the table's names"))
}

/// `--clock`: the clocks of the clock table that the command line offers.
pub(super) fn clock_value() -> impl TypedValueParser<Value = Clock> {
    PossibleValuesParser::new(
        CLOCKS
            .iter()
            .filter(|c| c.on_command_line)
            .map(|c| PossibleValue::new(c.name)),
    )
    .map(|name| Clock::named(&name).expect("clap admits only the table's names"))
}

/// `--trace-backend`: the names of the back ends.
pub(super) fn trace_backend_value() -> impl TypedValueParser<Value = TraceBackendChoice> {
    PossibleValuesParser::new(TraceBackendChoice::ALL.map(TraceBackendChoice::name))
        .map(|name| TraceBackendChoice::named(&name).expect("clap admits only the names"))
}

/// `--policy`: the names of measure's policy kinds.
pub(super) fn policy_value() -> impl TypedValueParser<Value = PolicyKind> {
    PossibleValuesParser::new(PolicyKind::ALL.map(PolicyKind::name))
        .map(|name| PolicyKind::named(&name).expect("clap admits only the kinds' names"))
}

/// `export --format`: the names and help of the exporters' table.
pub(super) fn export_format_value() -> impl TypedValueParser<Value = &'static ExportFormat> {
    PossibleValuesParser::new(
        EXPORT_FORMATS
            .iter()
            .map(|f| PossibleValue::new(f.name).help(f.help)),
    )
    .map(|name| ExportFormat::named(&name).expect("clap admits only the table's names"))
}

/// `import --format`: `auto`, or the names of the importers' table.
pub(super) fn import_format_value() -> impl TypedValueParser<Value = ImportFormat> {
    PossibleValuesParser::new(
        std::iter::once(PossibleValue::new("auto").help("recognise the format from the content"))
            .chain(
                SOURCE_FORMATS
                    .iter()
                    .map(|f| PossibleValue::new(f.name).help(f.help)),
            ),
    )
    .map(|name| SourceFormat::named(&name).map_or(ImportFormat::Auto, ImportFormat::Named))
}
