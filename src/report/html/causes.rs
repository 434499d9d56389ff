//! The report's "late wakeups by cause" table of a traced run (`report::causes`), shown before
//! the list of explanations.

use crate::format::run_record::RunRecord;
use crate::report::causes::{self, Culprit, Tallied};
use crate::report::svg::escape;
use crate::report::table::{Align, Html, Markup, Table};
use crate::units::format_ns;
use std::fmt::Write;

/// Culprits named in the summary sentence; the table lists them all.
const IN_SENTENCE: usize = 3;

pub(super) fn section(h: &mut String, record: &RunRecord, tallied: &Tallied) {
    if tallied.all == 0 {
        return;
    }
    let culprits = &tallied.culprits;
    let sentences: Vec<String> = culprits
        .iter()
        .take(IN_SENTENCE)
        .map(Culprit::sentence)
        .collect();
    let _ = write!(
        h,
        "<h4>Late wakeups by cause</h4><p class=\"causes-summary\">Of {} explained late wakeups: {}.</p>",
        tallied.all,
        escape(&sentences.join("; "))
    );
    let model = record
        .system
        .get("preemption_model")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("unknown");
    if let Some(note) = causes::kernel_code_note(culprits, model) {
        let _ = write!(h, "<p class=\"note kernel-code\">{}</p>", escape(&note));
    }
    let mut table = Table::new(
        ["cause", "late wakeups", "share", "total latency", "worst"],
        Align::Right,
    );
    for c in culprits {
        table.push_row(vec![
            c.description().into(),
            c.count.to_string().into(),
            format!("{:.1} %", c.share_percent).into(),
            format_ns(c.total_ns).into(),
            format_ns(c.worst_ns).into(),
        ]);
    }
    h.push_str(&Html { class: "causes" }.render(&table));
    if tallied.untallied > 0 {
        let _ = write!(
            h,
            "<p class=\"note\">And {} late wakeups of further culprits, in no row: past the {} culprits (or {} of their names) tallied.</p>",
            tallied.untallied,
            causes::MAX_CULPRITS,
            crate::input::format_bytes(causes::MAX_CULPRIT_NAME_BYTES as u64)
        );
    }
}
