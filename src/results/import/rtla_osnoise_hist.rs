//! What `rtla osnoise hist` prints (tools/tracing/rtla/src/osnoise_hist.c): rtla's histogram
//! table (`rtla_hist.rs`) with one column per CPU, `Index CPU-000 CPU-001 ...`. Each sample is
//! one noise event: a gap in osnoise's loop longer than its threshold (`-T`, 5 us by default),
//! so a column is a noise run's gap histogram. rtla leaves out the columns of CPUs that saw no
//! noise, and prints no runtime or total noise: the noise share, the gap rate and the loop
//! figures are absent.

use super::{Imported, Parser, RunKind, SourceFormat, SourceNoise, SourceThread, rtla_hist};
use super::{NoHeader, NoHeaderLayout, Recognise, Recognised};

/// Why output without the column line cannot be read as it is, and how it can.
pub(crate) const NO_HEADER: &str = "it is rtla osnoise hist output without its column line 'Index CPU-000 ...' (rtla --no-header), or one where no CPU saw noise (rtla then prints no column): which CPU each column is cannot be known from the file; name them with --cpus and --columns cpu (e.g. `jitterlab import FILE --cpus 0-3 --columns cpu`; docs/import.md), or capture without --no-header";

/// The one column rtla osnoise hist prints per CPU.
const COLUMNS: &[&str] = &["CPU"];

pub(crate) static FORMAT: SourceFormat = SourceFormat {
    name: "rtla-osnoise-hist",
    help: "what rtla osnoise hist prints: a histogram of noise lengths per CPU",
    parse: Parser::Text(parse),
    recognise: Recognise::Text(recognise),
    no_header: Some(NoHeader {
        columns: COLUMNS,
        parse: parse_no_header,
    }),
};

fn recognise(lines: &[&str]) -> Recognised {
    Recognised::from(
        lines
            .iter()
            .any(|l| l.starts_with("# RTLA osnoise histogram"))
            || lines
                .iter()
                .any(|l| l.starts_with("Index") && l.contains("CPU-")),
    )
}

pub(crate) fn parse(text: &str) -> Result<Imported, String> {
    let table = rtla_hist::read(text, COLUMNS)?;
    if table.columns.is_empty() {
        return Err(NO_HEADER.into());
    }
    Ok(from_table(table))
}

/// Output saved with `--no-header`, its CPUs named by the user.
fn parse_no_header(text: &str, layout: &NoHeaderLayout) -> Result<Imported, String> {
    let mut imported = from_table(rtla_hist::read_no_header(text, layout)?);
    imported.warnings.push(rtla_hist::no_header_warning(layout));
    Ok(imported)
}

fn from_table(table: rtla_hist::Table) -> Imported {
    let threads = table
        .columns
        .into_iter()
        .map(|c| SourceThread {
            noise: Some(SourceNoise::default()),
            ..SourceThread::new(c.cpu, c.histogram)
        })
        .collect();
    Imported {
        kind: RunKind::Noise,
        duration_ns: table.duration_ns,
        stopped: table.stopped,
        warnings: vec![
            "rtla osnoise hist: each sample is one noise event (a gap above osnoise's threshold, 5 us unless -T); it prints no runtime or total noise, so the noise share, gap rate and loop figures are absent, and CPUs without noise are not listed".into(),
            "rtla prints averages to 2 decimals; mean_ns is that figure".into(),
        ],
        ..Imported::new(&FORMAT, threads)
    }
}
