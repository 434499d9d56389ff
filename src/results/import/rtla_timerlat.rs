//! What `rtla timerlat hist` prints (Documentation/tools/rtla/rtla-timerlat-hist.rst): rtla's
//! histogram table (`rtla_hist.rs`) with the columns `Index IRQ-000 Thr-000 [Usr-000] IRQ-001 ...`.
//!
//! The latency a task sees is the Usr column (rtla -u, a user-space thread) or else the Thr
//! column (the timerlat kernel thread); IRQ is the timer interrupt's latency. A Usr column
//! without samples (its user thread never woke: count 0, figures `-` or 2^64−1, rtla's
//! unset value) leaves Thr as the latency, so that the CPU's histograms are kept.
//!
//! rtla stops early when a latency crosses `-i`/`-T` and prints `rtla timerlat hit stop
//! tracing`: such a run is recorded as interrupted, with that reason.

use super::{Imported, Parser, RunFacts, RunKind, SourceFormat, SourceThread, rtla_hist};
use super::{NoHeader, NoHeaderLayout, Recognise, Recognised};

/// Why output without the column line cannot be read as it is, and how it can.
pub(crate) const NO_HEADER: &str = "it is rtla hist output without its column line 'Index IRQ-000 Thr-000 ...' (rtla --no-header, as LAVA's jobs save it): the columns are not named, so which CPU and which of IRQ, Thr and Usr each column is cannot be known from the file; name them with --cpus and --columns (e.g. `jitterlab import FILE --cpus 0-3 --columns irq,thr` for rtla timerlat hist, `--columns irq,thr,usr` with rtla -u, `--columns cpu` for rtla osnoise hist; docs/import.md), or capture without --no-header";

/// The columns rtla timerlat hist prints per CPU, in its order.
const COLUMNS: &[&str] = &["IRQ", "Thr", "Usr"];

pub(crate) static FORMAT: SourceFormat = SourceFormat {
    name: "rtla-timerlat-hist",
    help: "what rtla timerlat hist prints: IRQ, Thr (and Usr) columns per CPU",
    parse: Parser::Text(parse),
    recognise: Recognise::Text(recognise),
    no_header: Some(NoHeader {
        columns: COLUMNS,
        parse: parse_no_header,
    }),
};

/// Its header or its column line; without both (`--no-header`), refused: the rows and the
/// count:/over: lines are there, but nothing names the columns.
fn recognise(lines: &[&str]) -> Recognised {
    if lines
        .iter()
        .any(|l| l.starts_with("# RTLA timerlat histogram"))
        || lines
            .iter()
            .any(|l| l.starts_with("Index") && (l.contains("IRQ-") || l.contains("Thr-")))
    {
        return Recognised::Yes;
    }
    if ["over:", "count:", "min:", "max:"]
        .iter()
        .all(|label| lines.iter().any(|l| l.starts_with(label)))
    {
        return Recognised::Refused(NO_HEADER);
    }
    Recognised::No
}

pub(crate) fn parse(text: &str) -> Result<Imported, String> {
    let table = rtla_hist::read(text, COLUMNS)?;
    if table.columns.is_empty() {
        return Err(NO_HEADER.into());
    }
    from_table(table, Vec::new())
}

/// Output saved with `--no-header`, its columns named by the user.
fn parse_no_header(text: &str, layout: &NoHeaderLayout) -> Result<Imported, String> {
    let table = rtla_hist::read_no_header(text, layout)?;
    from_table(table, vec![rtla_hist::no_header_warning(layout)])
}

fn from_table(table: rtla_hist::Table, mut warnings: Vec<String>) -> Result<Imported, String> {
    let columns = &table.columns;
    let mut cpus: Vec<usize> = columns.iter().map(|c| c.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let mut threads = Vec::new();
    let mut empty_usr = Vec::new();
    for cpu in cpus {
        let find = |name: &str| {
            columns
                .iter()
                .find(|c| c.name == name && c.cpu == cpu)
                .map(|c| c.histogram.clone())
        };
        let (irq, thr, usr) = (find("IRQ"), find("Thr"), find("Usr"));
        let (latency, kernel_thread) = match (usr, thr) {
            (Some(u), Some(t)) if u.samples() == 0 => {
                empty_usr.push(cpu);
                (t, None)
            }
            (Some(u), thr) => (u, thr),
            (None, Some(t)) => (t, None),
            (None, None) => {
                return Err(format!(
                    "CPU {cpu} has no Thr or Usr column (rtla --no-thread output has no task latency)"
                ));
            }
        };
        threads.push(SourceThread {
            cpu,
            latency,
            irq,
            kernel_thread,
            interval_ns: None,
            noise: None,
        });
    }
    if !empty_usr.is_empty() {
        warnings.push(format!(
            "CPU {:?}: the Usr column has no samples (rtla's user-space thread never woke); the Thr column is the latency there",
            empty_usr
        ));
    }
    if threads.iter().any(|t| t.kernel_thread.is_some()) {
        warnings.push("rtla ran with user-space threads (-u): the latency is the Usr column; the kernel-side Thr column is kept in latency.hlog as cpuN.thr".into());
    }
    warnings.push("rtla prints averages in whole units (truncated); mean_ns is that figure".into());
    Ok(Imported {
        format: &FORMAT,
        kind: RunKind::Latency,
        threads,
        command_line: Vec::new(),
        started: None,
        duration_ns: table.duration_ns,
        stopped: table.stopped,
        facts: RunFacts::default(),
        failed: false,
        system: serde_json::Value::Null,
        warnings,
    })
}
