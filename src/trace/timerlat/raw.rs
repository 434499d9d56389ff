//! The tracer's entries read as rtla reads them: the binary ring-buffer pages of the instance's
//! `per_cpu/cpuN/trace_pipe_raw`, one page per read ([`crate::trace::page`]), each timerlat
//! entry decoded with the layout of its format file, `events/ftrace/timerlat/format` (the
//! tracer's own entry, `TRACE_TIMERLAT`, there since the tracer came in 5.14: `seqnum`,
//! `context`, `timer_latency` in ns).
//!
//! Why not the text pipe (`trace_pipe`), which this engine read first: the kernel formats every
//! entry as text on the reading CPU and merges the CPUs' buffers entry by entry, where a page
//! read copies 4 KB at once. In the lab's emulated guest the text reader's process used 20-24%
//! of the housekeeping CPU while it measured, rtla's 4% (docs/lab.md, check 2): host time the
//! emulated measured CPU did not get. What a page holds is the same entry the text is printed
//! from, so no figure changes: the samples are written to `timerlat.trace` in the text the
//! kernel prints ([`text_line`]), and the table is made from that text by the one parser
//! (sample.rs).

use crate::trace::format::{EventFormat, Field, Formats, load_event, parse_event_format};
use crate::trace::page::{Missed, PageError, read_page};
use std::path::Path;

/// The tracer's entry layout (its `events/ftrace/timerlat/format`).
#[derive(Debug, Clone)]
pub(crate) struct EntryFormat {
    id: u16,
    seqnum: Field,
    context: Field,
    timer_latency: Field,
    common_pid: Field,
}

impl EntryFormat {
    fn of(f: &EventFormat) -> Result<EntryFormat, String> {
        Ok(EntryFormat {
            id: f.id,
            seqnum: f.require("seqnum")?,
            context: f.require("context")?,
            timer_latency: f.require("timer_latency")?,
            common_pid: f.require("common_pid")?,
        })
    }

    /// Parses the text of the format file.
    #[cfg_attr(
        not(test),
        expect(
            dead_code,
            reason = "dead since pub(crate) (issue 41 sweep): read by its unit tests only; trace's owner decides"
        )
    )]
    pub(crate) fn parse(text: &str) -> Result<EntryFormat, String> {
        EntryFormat::of(&parse_event_format("ftrace", text)?)
    }

    /// Reads `events/ftrace/timerlat/format` under the tracefs `root`.
    pub(crate) fn load(root: &Path) -> Result<EntryFormat, String> {
        EntryFormat::of(&load_event(root, "ftrace", "timerlat")?)
    }
}

/// The text the kernel prints for a timerlat entry (kernel/trace/trace_output.c,
/// `trace_timerlat_print`, after the usual `task-pid [CPU] time:` prefix), less what a raw
/// entry does not hold: the task's name (`<...>`, as the kernel prints an unknown one; `<idle>`
/// for pid 0) and the flags column.
pub(crate) fn text_line(
    ts_ns: u64,
    pid: i64,
    cpu: usize,
    seq: u64,
    context: i64,
    latency_ns: u64,
) -> String {
    let task = if pid == 0 { "<idle>" } else { "<...>" };
    let context = match context {
        0 => "irq".to_string(),
        1 => "thread".to_string(),
        // A newer kernel's user-space threads (`user-ret`, 6.7+): kept, never counted.
        2 => "user-ret".to_string(),
        n => format!("context-{n}"),
    };
    // In us rounded to the nearest, as the kernel prints it (ns2usecs).
    let us = ts_ns.saturating_add(500) / 1000;
    format!(
        "{task:>16}-{pid:<7} [{cpu:03}] {:>5}.{:06}: #{seq:<5} context {context:>6} timer_latency {latency_ns:>9} ns",
        us / 1_000_000,
        us % 1_000_000
    )
}

/// The lost-entries line the kernel's text pipe prints: with the count where the page stored
/// it, without where it did not.
pub(crate) fn lost_line(cpu: usize, missed: Missed) -> Option<String> {
    match missed {
        Missed::None => None,
        Missed::Count(n) => Some(format!("CPU:{cpu} [LOST {n} EVENTS]")),
        Missed::Unknown => Some(format!("CPU:{cpu} [LOST EVENTS]")),
    }
}

/// Decodes one page read from CPU `cpu`'s `trace_pipe_raw` into `out`, each line with its time
/// (ns of the trace clock, for merging the CPUs): its loss line first (the loss lies before its
/// first entry), then a line per timerlat entry; other entries are skipped (the instance
/// traces nothing else).
pub(crate) fn page_lines(
    formats: &Formats,
    entry: &EntryFormat,
    cpu: usize,
    page: &[u8],
    out: &mut Vec<(u64, String)>,
) -> Result<(), PageError> {
    let at = out.len();
    let mut bad = None;
    let info = read_page(formats, page, |ts, record| {
        let Some(id) = record.get(0..2).map(|b| u16::from_ne_bytes([b[0], b[1]])) else {
            return;
        };
        if id != entry.id {
            return;
        }
        let fields = (
            entry.seqnum.uint(record),
            entry.context.int(record),
            entry.timer_latency.uint(record),
            entry.common_pid.int(record),
        );
        match fields {
            (Some(seq), Some(context), Some(latency), Some(pid)) => {
                out.push((ts, text_line(ts, pid, cpu, seq, context, latency)))
            }
            _ => {
                bad.get_or_insert(record.len());
            }
        }
    })?;
    if let Some(len) = bad {
        return Err(PageError(format!(
            "a timerlat entry of {len} bytes is shorter than its format file says"
        )));
    }
    if let Some(l) = lost_line(cpu, info.missed) {
        out.insert(at, (info.timestamp, l));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
