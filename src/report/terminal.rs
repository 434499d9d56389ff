//! The end-of-run summary on the terminal: warnings first, then one row per CPU, every number
//! with its unit.

use super::cpu_summary::{self, WIDTH, wrap};
use super::cpu_tables;
use super::heading;
use super::noise_lines;
use super::table::{Markup, Terminal};
use crate::format::run_record::{RunRecord, format_throughput};
use crate::results::sweep::{SweepRecord, SweepRow};
use crate::units::format_ns;
use std::fmt::Write;

/// Renders the summary of a finished run, within [`WIDTH`] columns: warnings first, the
/// heading, one line per CPU (above 16 CPUs the worst and the rest summed up; `cpu_summary`),
/// loads, trace, phases, budget. `verbose` adds every CPU, each CPU's percentiles and its tail
/// statements (docs/tails.md), which the default folds into the table's last column.
pub fn summary(record: &RunRecord, dir: &std::path::Path, verbose: bool) -> String {
    let mut text = String::new();
    if !record.warnings.is_empty() {
        text.push_str("Warnings (conditions that affect these results):\n");
        for w in &record.warnings {
            let _ = writeln!(text, "  ! {w}");
        }
        text.push('\n');
    }
    let mut tables = String::new();
    // A time-lost kind's summary is its noise share, time lost and gaps per second; a
    // periodic kind's is its latency percentiles.
    if record.kind.spec().time_lost {
        let _ = writeln!(text, "{}", heading::noise(record));
        if let Some(reason) = &record.end_reason {
            let _ = writeln!(text, "  ended: {reason}");
        }
        let (table, note) = noise_lines::noise_table(&noise_lines::noise_lines(record), verbose);
        tables += &Terminal.render(&table);
        if let Some(note) = note {
            tables += &wrap(&format!("  {note}"), WIDTH, "  ");
        }
        if verbose {
            tables += &Terminal.render(&super::noise::loop_table(record));
        }
    } else {
        text.push_str(&heading::latency(record));
        let words = record.kind.words();
        let (table, note) =
            cpu_summary::latency_table(&cpu_summary::cpu_lines(record), verbose, words.plural);
        tables += &Terminal.render(&table);
        if let Some(note) = note {
            tables += &wrap(&format!("  {note}"), WIDTH, "  ");
        }
        if verbose {
            tables += &Terminal.render(&cpu_tables::percentiles(record));
        }
    }
    let mut out = wrap(&text, WIDTH, "  ");
    out += &tables;
    let mut rest = String::new();
    for load in &record.loads {
        let _ = writeln!(rest, "  {}", crate::format::run_record::load_line(load));
    }
    for (i, line) in super::inversion::lines(record).iter().enumerate() {
        let _ = writeln!(rest, "{}{line}", if i == 0 { "" } else { "  " });
    }
    out += &wrap(&rest, WIDTH, "  ");
    out.push_str(&trace_section(record, verbose));
    out += &super::phases::summary(record, verbose);
    let tails = super::tails::summary(record);
    if verbose {
        out += &wrap(&tails, WIDTH, "    ");
    } else if !tails.is_empty() {
        out += "Tails: each CPU's statements with --verbose, or in `jitterlab report` (docs/tails.md)\n";
    }
    out += &wrap(&super::counters::summary(record), WIDTH, "    ");
    let mut end = String::new();
    if let Some(verdict) = &record.budget {
        let _ = writeln!(end, "Budget {}:", verdict.expression);
        for line in crate::analysis::budget::verdict_lines(verdict) {
            let _ = writeln!(end, "  {line}");
        }
    }
    let _ = writeln!(end, "Results: {}", dir.display());
    out += &wrap(&end, WIDTH, "  ");
    out
}

/// A noise run's trace: the noise by cause per CPU, and the longest gaps explained.
fn noise_trace_section(
    record: &RunRecord,
    trace: &crate::format::run_record::TraceRecord,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "  noise by cause (--trace; gaps above {} explained: {}, all in events.jsonl):",
        format_ns(trace.explain_above_ns),
        trace.explained
    );
    for line in super::noise::cause_lines(record) {
        let _ = writeln!(out, "  {line}");
    }
    let mut out = wrap(&out, WIDTH, "  ");
    if let Some(table) = super::noise::causes_table(record) {
        out.push_str(&Terminal.render(&table));
    }
    let mut out_tables = out;
    let mut out = String::new();
    if !trace.worst.is_empty() {
        let _ = writeln!(out, "  the longest gaps:");
    }
    for x in &trace.worst {
        let at = x.due_ns.saturating_sub(record.start_monotonic_ns);
        let _ = writeln!(
            out,
            "    cpu{} at {:.3} s: {}",
            x.cpu,
            at as f64 / 1e9,
            x.verdict
        );
    }
    out_tables += &wrap(&out, WIDTH, "      ");
    out_tables
}

/// `--trace`: IRQ and thread latency side by side per CPU, and the worst explained wakeups.
fn trace_section(record: &RunRecord, verbose: bool) -> String {
    let mut out = String::new();
    let Some(trace) = &record.trace else {
        return out;
    };
    // The trace of time lost: its causes; of a wakeup: the IRQ/thread split.
    if record.kind.spec().time_lost {
        return noise_trace_section(record, trace);
    }
    let _ = writeln!(
        out,
        "  latency split (--trace): IRQ = timer interrupt late vs its expiry; thread = timer expiry to the thread in user space"
    );
    let mut out = wrap(&out, WIDTH, "  ");
    if let Some((table, note)) = cpu_tables::latency_split(record, verbose) {
        out.push_str(&Terminal.render(&table));
        if let Some(note) = note {
            out += &wrap(&format!("  {note}; --verbose shows every CPU"), WIDTH, "  ");
        }
    }
    let mut lines = String::new();
    if trace.explained > 0 {
        let _ = writeln!(
            lines,
            "  late wakeups explained: {} (all in events.jsonl); the worst:",
            trace.explained
        );
        for x in &trace.worst {
            let at = x.due_ns.saturating_sub(record.start_monotonic_ns);
            let _ = writeln!(
                lines,
                "    cpu{} at {:.3} s: {}",
                x.cpu,
                at as f64 / 1e9,
                x.verdict
            );
            if let Some(stack) = stack_line(x) {
                let _ = writeln!(lines, "      {stack}");
            }
        }
        // The kernel functions behind them (the culprits' stacks), with --verbose.
        if verbose {
            let run_ns = record.duration_ns;
            let ranking = crate::report::stack_rank::rank(trace.worst.iter(), run_ns);
            if let Some(line) = crate::report::stack_rank::line(&ranking, 8) {
                let _ = writeln!(lines, "  {line}");
            }
            if let Some(warning) = crate::report::stack_rank::damaged_warning(&ranking, run_ns) {
                let _ = writeln!(lines, "  warning: {warning}");
            }
        }
    } else {
        let _ = writeln!(lines, "  late wakeups explained: none");
    }
    out += &wrap(&lines, WIDTH, "      ");
    out
}

/// Frames of a culprit's kernel stack named on the terminal; the report lists them all.
const TOP_FRAMES: usize = 3;

/// The culprit's kernel stack of an explanation on one line, its innermost frames first:
/// `kernel stack of jl-spike-0 (pid 900): spin_loop+0x10 <- do_syscall_64+0x44 (2 frames)`.
fn stack_line(x: &crate::format::events::SpikeExplanation) -> Option<String> {
    let (c, stack) = x.culprit_stack()?;
    let top: Vec<&str> = stack
        .frames
        .iter()
        .take(TOP_FRAMES)
        .map(String::as_str)
        .collect();
    let more = if stack.frames.len() > TOP_FRAMES {
        " <- ..."
    } else {
        ""
    };
    Some(format!(
        "kernel stack of {}{}: {}{more} ({} frames{})",
        c.name,
        c.pid.map_or(String::new(), |p| format!(" (pid {p})")),
        top.join(" <- "),
        stack.frames.len(),
        if stack.note.is_some() {
            ", unnamed: no kernel symbols"
        } else {
            ""
        }
    ))
}

/// One level of a sweep on one line: the swept load's throughput, then p99 and max per CPU.
pub(crate) fn sweep_row(row: &SweepRow) -> String {
    let cpus: Vec<String> = row
        .threads
        .iter()
        .map(|t| {
            let mut text = format!(
                "cpu{} p99 {} max {}",
                t.cpu,
                t.p99_ns.map_or("-".into(), format_ns),
                signed(t.max_ns)
            );
            if t.dropped_records > 0 {
                let _ = write!(text, " ({} samples dropped)", t.dropped_records);
            }
            text
        })
        .collect();
    if cpus.is_empty() {
        return format_throughput(&row.throughput);
    }
    format!(
        "{}; {}",
        format_throughput(&row.throughput),
        cpus.join(", ")
    )
}

/// A sweep's summary on the terminal: the latency per level and CPU, then the load's
/// throughput per level (a table of its own, so that the latency columns stay on screen).
pub(crate) fn sweep_table(record: &SweepRecord) -> String {
    use crate::report::sweep_tables::{latency_table, throughput_table};
    use crate::report::table::{Markup, Terminal};
    let mut out = format!("jitterlab sweep: {}\n", record.load_template);
    if record.load_only {
        out += "(loads alone, not measured)\n";
    } else {
        out += &Terminal.render(&latency_table(record, |_| String::new()));
    }
    if let Some(t) = throughput_table(record) {
        out += "Load throughput per level:\n";
        out += &Terminal.render(&t);
    }
    let warnings = record.level_warnings();
    if !warnings.is_empty() {
        out += "Warnings (conditions that affect these results):\n";
        for w in warnings {
            let _ = writeln!(out, "  ! {w}");
        }
    }
    out
}

fn signed(v: Option<i64>) -> String {
    match v {
        Some(n) if n >= 0 => format_ns(n as u64),
        Some(n) => format!("-{}", format_ns(n.unsigned_abs())),
        None => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::tails::{SpikeRecord, TailRecord};
    use crate::results::synthetic::{SyntheticRun, write_run};

    /// A synthetic 2 s run on `n` CPUs, the last CPU with one 5 ms wakeup, with the VM's
    /// warning and each CPU's deadline spikes and a refused extrapolation, as a run has them.
    fn synthetic(n: usize) -> (tempfile::TempDir, RunRecord) {
        let dir = tempfile::tempdir().unwrap();
        let run = SyntheticRun {
            cpus: (0..n).collect(),
            interval_ns: 1_000_000,
            log_interval_ns: 1_000_000_000,
            duration_ns: 2_000_000_000,
            phases: vec![],
            loads: vec![],
            warnings: vec!["measured in a virtual machine (hypervisor: KVM); steal time so far 0.56%: latencies include the host's scheduling of the virtual CPUs and say little about the hardware".into()],
            seed: n as u64,
        };
        let mut record = write_run(&dir.path().join("run"), &run, |cpu, t, rng| {
            let spike = cpu == n - 1 && t == 1_000_000_000;
            if spike {
                5_000_000
            } else {
                10_000 + (rng.uniform() * 5_000.0) as i64
            }
        })
        .unwrap();
        for t in &mut record.threads {
            let count = u64::from(t.cpu == n - 1);
            t.tails.spikes.push(SpikeRecord {
                threshold_ns: 1_000_000,
                basis: "deadline".into(),
                count,
                count_is_lower_bound: false,
                resolution_ns: 1_000_000,
                exposure_ns: 2_000_000_000,
                rate_per_hour: count as f64 * 1800.0,
                rate_per_hour_low: 0.0,
                rate_per_hour_high: 6_600.0,
                mtbf_ns: (count > 0).then_some(2_000_000_000),
                period_ns: None,
                period_share: None,
                times_ns: vec![],
                times_omitted: 0,
                not_counted: None,
            });
            t.tails.tail = Some(TailRecord::Refused {
                refused: "too few".into(),
                reason: "too few wakeups for a tail fit: 2000 wakeups give fewer than 50 in their top 0.5 % (run at least 10000 wakeups)".into(),
            });
        }
        (dir, record)
    }

    fn assert_fits(text: &str) {
        for l in text.lines() {
            assert!(
                l.chars().count() <= WIDTH,
                "{} columns: {l}\n{text}",
                l.chars().count()
            );
        }
    }

    #[test]
    fn a_culprits_stack_is_one_line_of_its_top_frames() {
        use crate::format::events::{Contributor, KernelStack, SpikeExplanation};
        let frames = |n: usize| (0..n).map(|i| format!("f{i}+0x{i}")).collect();
        let mut x = SpikeExplanation {
            time_ns: 0,
            cpu: 0,
            due_ns: 0,
            latency_ns: 1,
            irq_latency_ns: None,
            thread_latency_ns: None,
            verdict: String::new(),
            contributors: vec![Contributor {
                kind: "task".into(),
                name: "jl-spike-0".into(),
                pid: Some(900),
                policy: None,
                prio: None,
                duration_ns: 1,
                stack: None,
            }],
        };
        assert_eq!(stack_line(&x), None);
        x.contributors[0].stack = Some(KernelStack {
            frames: frames(5),
            note: None,
        });
        assert_eq!(
            stack_line(&x).unwrap(),
            "kernel stack of jl-spike-0 (pid 900): f0+0x0 <- f1+0x1 <- f2+0x2 <- ... (5 frames)"
        );
        x.contributors[0].stack = Some(KernelStack {
            frames: frames(2),
            note: Some("hidden".into()),
        });
        assert_eq!(
            stack_line(&x).unwrap(),
            "kernel stack of jl-spike-0 (pid 900): f0+0x0 <- f1+0x1 (2 frames, unnamed: no kernel symbols)"
        );
    }

    #[test]
    fn the_summary_of_2_16_and_128_cpus_fits_100_columns() {
        for n in [2, 16, 128] {
            let (dir, record) = synthetic(n);
            let short = summary(&record, dir.path(), false);
            assert_fits(&short);
            let rows = short
                .lines()
                .filter(|l| l.contains(" ms, once in ") || l.contains("none > "))
                .count();
            // One line per CPU up to 16; above, the 8 worst and the rest's line.
            assert_eq!(rows, if n <= 16 { n } else { 9 }, "{short}");
            assert!(short.contains("1 > 1.00 ms, once in 2.0 s"), "{short}");
            assert!(
                short.contains("Tails: each CPU's statements with --verbose"),
                "{short}"
            );
            let verbose = summary(&record, dir.path(), true);
            assert_fits(&verbose);
            assert!(
                verbose.contains(&format!("cpu{}: not extrapolated", n - 1)),
                "{verbose}"
            );
        }
        let (dir, record) = synthetic(128);
        let short = summary(&record, dir.path(), false);
        // The worst CPU first, the rest summed up and named.
        let first = short
            .lines()
            .find(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
            .unwrap();
        assert!(first.trim_start().starts_with("127 "), "{short}");
        assert!(short.contains("+120: the other 120 CPUs"), "{short}");
        assert!(short.lines().count() < 30, "{short}");
    }

    /// The hostile re-run's L3-e: README's example output had columns (`samples min mean`) and
    /// a "Tails (docs/tails.md):" section that `run` no longer prints. Its heading, the
    /// table's header row and the tails' line are what this summary prints (numbers and
    /// column widths aside).
    #[test]
    fn the_readme_example_is_what_run_prints() {
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
        let block = &readme[readme.find("## Try it").unwrap()..];
        let block = &block[block.find("```text\n").unwrap() + 8..];
        let block: Vec<&str> = block[..block.find("```").unwrap()].lines().collect();
        let (dir, record) = synthetic(2);
        let printed = summary(&record, dir.path(), false);
        let printed: Vec<&str> = printed
            .lines()
            .skip_while(|l| !l.starts_with("jitterlab run:"))
            .collect();
        // Numbers masked, spaces squeezed.
        let shape = |lines: &[&str]| -> String {
            let text = lines.join(" ");
            let mut out = String::new();
            for c in text.chars() {
                if c.is_ascii_digit() {
                    if !out.ends_with('#') {
                        out.push('#');
                    }
                } else if !(c == '.' && out.ends_with('#')) {
                    out.push(c);
                }
            }
            out.split_whitespace().collect::<Vec<_>>().join(" ")
        };
        let heading = |lines: &[&str]| {
            let end = lines
                .iter()
                .position(|l| l.trim_start().starts_with("CPU"))
                .unwrap();
            (shape(&lines[..end]), shape(&lines[end..end + 1]))
        };
        assert_eq!(
            heading(&block),
            heading(&printed),
            "README's example heading and table"
        );
        let tails = printed.iter().find(|l| l.starts_with("Tails")).unwrap();
        assert!(block.contains(tails), "README's example lacks {tails:?}");
        assert!(
            block
                .last()
                .unwrap()
                .starts_with("Results: jitterlab-results/")
        );
    }
}
