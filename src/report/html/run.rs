//! A run's section of the report: where it came from, its budget verdict and warnings, plan and
//! system, the per-CPU, phase, load and spike tables, then its plots.

use super::blocks::{figure, key_values, run_label};
use crate::doctor::{SystemSnapshot, Verdict};
use crate::format::run_record::RunRecord;
use crate::report::cpu_tables::{self, Detail, signed};
use crate::report::digest::RunDigest;
use crate::report::plot::Figure;
use crate::report::svg::escape;
use crate::report::table::{Align, Cell, Html, Markup, Table};
use crate::units::{format_elapsed, format_ns, format_ns_signed};
use std::fmt::Write;

/// Spike explanations listed per run (the latest ones first would hide the worst: sorted by
/// latency, largest first).
const MAX_SPIKES_LISTED: usize = 50;

/// The section of one run: notes, budget, warnings, plan and system, the tables, the plots.
/// `shared_warnings`: the anchor of the box this run's warnings are in, and the runs it names
/// (a report of several runs); else the run's own box.
pub(super) fn section(
    h: &mut String,
    number: usize,
    run: &RunDigest,
    figures: &[Figure],
    shared_warnings: Option<&(String, String)>,
) {
    let r = &run.record;
    let _ = write!(
        h,
        "<section id=\"run{number}\" class=\"run\"><h2>{}</h2>\n<p class=\"path\">{}</p>\n",
        escape(&run_label(number - 1, run)),
        escape(&run.path.display().to_string())
    );
    if let Some(imp) = &r.imported {
        let _ = writeln!(
            h,
            "<div class=\"note imported\"><strong>Imported</strong> from {} output <code>{}</code>. {}</div>",
            escape(&imp.source_format),
            escape(&imp.source_file),
            if imp.per_interval {
                "The source had per-interval data."
            } else {
                "The source has no per-interval data: there is no latency-over-time plot or heat map, and nothing is invented in their place."
            }
        );
    }
    if let Some(b) = &r.budget {
        let _ = write!(
            h,
            "<div class=\"budget {}\"><h3>Budget <code>{}</code>: {}</h3><div class=\"table-wrap\"><table><tr><th>clause</th><th>result</th><th>measured</th></tr>",
            if b.passed { "pass" } else { "fail" },
            escape(&b.expression),
            if b.passed { "PASSED" } else { "FAILED" }
        );
        for c in &b.clauses {
            let _ = write!(
                h,
                "<tr class=\"{}\"><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                if c.passed { "pass" } else { "fail" },
                escape(&c.clause),
                if c.passed { "pass" } else { "FAIL" },
                escape(&c.actual)
            );
        }
        h.push_str("</table></div></div>\n");
    }
    match shared_warnings {
        Some((anchor, runs)) => {
            let _ = writeln!(
                h,
                "<p class=\"note warnings-ref\">Warnings: <a href=\"#{}\">the box for {}</a>.</p>",
                escape(anchor),
                escape(runs)
            );
        }
        None => {
            let own = super::warnings::of_run(r);
            if !own.is_empty() {
                super::warnings::write_box(h, &own, None);
            }
        }
    }
    h.push_str("<div class=\"columns\"><div><h3>Plan</h3>");
    key_values(h, "plan", &plan_rows(r));
    h.push_str("</div><div><h3>System</h3>");
    key_values(h, "system", &system_rows(r));
    h.push_str("</div></div>\n");
    cpu_table(h, r);
    phases_table(h, r);
    loads_table(h, r);
    inversion_section(h, r);
    trace_section(h, run);
    super::tails::section(h, run);
    if !run.has_hlog {
        h.push_str("<p class=\"note\">This directory has no latency.hlog: there are no plots, only run.json's figures.</p>");
    }
    for f in figures {
        figure(h, f);
        // What the context counters showed, where no figure of them does.
        if f.name.ends_with("-timeline")
            && let Some(note) = crate::report::counters::html_note(r, figures)
        {
            let _ = writeln!(h, "<p class=\"note counters\">{}</p>", escape(&note));
        }
    }
    h.push_str("</section>\n");
}

/// `--wake pi-mutex`: the roles and each CPU's inversions.
fn inversion_section(h: &mut String, r: &RunRecord) {
    let lines = crate::report::inversion::lines(r);
    let Some((heading, cpus)) = lines.split_first() else {
        return;
    };
    let _ = write!(
        h,
        "<h3>Priority inversion</h3>\n<p>{}</p>\n<ul>",
        escape(heading)
    );
    for line in cpus {
        let _ = write!(h, "<li>{}</li>", escape(line));
    }
    h.push_str("</ul>\n");
}

fn plan_rows(r: &RunRecord) -> Vec<(&'static str, String)> {
    let p = &r.plan;
    // An imported run's placeholders are unknowns, shown as `-` (imported.absent).
    let known = |field: &str, shown: String| {
        if r.is_absent(field) {
            "-".into()
        } else {
            shown
        }
    };
    let mut rows = vec![
        (
            "CPUs",
            p.cpus
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(", "),
        ),
        (
            "policy",
            match (r.is_absent("plan.policy"), r.is_absent("plan.priority")) {
                (true, true) => "-".into(),
                (false, true) => p.policy.to_uppercase(),
                _ => format!("{} {}", p.policy.to_uppercase(), p.priority),
            },
        ),
        (
            "wake method",
            known("plan.wake", format!("{} ({} clock)", p.wake, p.clock)),
        ),
        (
            "interval",
            known("plan.interval_ns", format_ns(p.interval_ns)),
        ),
    ];
    if p.distance_ns > 0 {
        rows.push(("distance per thread", format_ns(p.distance_ns)));
    }
    if p.interval_step_ns > 0 {
        rows.push(("interval step", format_ns(p.interval_step_ns)));
    }
    rows.push((
        "length",
        match (p.duration_ns, p.loops) {
            (Some(d), _) => format_elapsed(d),
            (None, Some(n)) => format!("{n} loops"),
            _ => "-".into(),
        },
    ));
    rows.push((
        "deadline",
        p.deadline_ns.map_or("the interval".into(), format_ns),
    ));
    if r.imported.is_none() {
        rows.push(("log interval", format_ns(p.log_interval_ns)));
    }
    rows.push((
        "loads",
        if p.loads.is_empty() {
            "none".into()
        } else {
            p.loads.join("; ")
        },
    ));
    rows.push((
        "memory locked",
        known(
            "environment.memory_locked",
            yes_no(r.environment.memory_locked),
        ),
    ));
    rows.push((
        "PM QoS",
        known(
            "environment.pm_qos",
            match (r.environment.pm_qos.held_us, &r.environment.pm_qos.error) {
                (Some(us), _) => format!("/dev/cpu_dma_latency held at {us} us"),
                (None, Some(e)) => format!("not held: {e}"),
                (None, None) => "left alone".into(),
            },
        ),
    ));
    if let Some(idle) = &r.environment.idle_states {
        let states: Vec<String> = idle
            .disabled
            .iter()
            .map(|s| format!("CPU {} {} ({} us)", s.cpu, s.name, s.latency_us))
            .collect();
        rows.push((
            "idle states",
            format!(
                "deeper than state {} disabled for the run: {}",
                idle.max,
                if states.is_empty() {
                    "none was enabled".into()
                } else {
                    states.join(", ")
                }
            ),
        ));
    }
    rows.push(("sample log", yes_no(p.samples)));
    rows.push(("started (UTC)", known("started_utc", r.started_utc.clone())));
    rows.push((
        "ended",
        match r.duration_ns {
            Some(d) => format!("{} after {}", r.ended.as_str(), format_elapsed(d)),
            None => r.ended.as_str().to_string(),
        },
    ));
    rows.push(("jitterlab", r.jitterlab_version.clone()));
    rows.push((
        "command line",
        known("command_line", r.command_line.join(" ")),
    ));
    rows
}

/// Each measured CPU's steal over the run, with the window and the tick it is exact to.
fn steal_during_run(steal: &crate::format::steal::StealRecord) -> String {
    let cpus: Vec<String> = steal
        .cpus
        .iter()
        .map(|c| {
            format!(
                "CPU {}: {:.0} ms ({:.2}%)",
                c.cpu,
                c.steal_ns as f64 / 1e6,
                steal.share_percent(c.steal_ns).unwrap_or(0.0)
            )
        })
        .collect();
    format!(
        "{} of {:.1} s, ±{:.0} ms (/proc/stat ticks)",
        cpus.join(", "),
        steal.window_ns as f64 / 1e9,
        steal.tick_ns as f64 / 1e6
    )
}

fn yes_no(b: bool) -> String {
    if b { "yes".into() } else { "no".into() }
}

fn system_rows(r: &RunRecord) -> Vec<(&'static str, String)> {
    match serde_json::from_value::<SystemSnapshot>(r.system.clone()) {
        Ok(s) => {
            let mut rows = vec![
                ("host", s.hostname),
                ("kernel", format!("{} ({})", s.kernel_release, s.machine)),
                ("preemption", s.preemption_model),
                (
                    "tick",
                    s.hz.map_or("unknown".into(), |hz| format!("{hz} Hz")),
                ),
                (
                    "clocksource",
                    s.clocksource.unwrap_or_else(|| "unknown".into()),
                ),
                (
                    "CPUs",
                    format!("{} present, {} online", s.cpu_count, s.online_cpus.len()),
                ),
                (
                    "virtualisation",
                    s.hypervisor.unwrap_or_else(|| "none (bare metal)".into()),
                ),
            ];
            if let Some(steal) = s.steal_recent_percent {
                rows.push(("steal (recent)", format!("{steal:.1}%")));
            }
            if let Some(steal) = &r.steal {
                rows.push(("steal during the run", steal_during_run(steal)));
            }
            let count = |v: Verdict| s.checks.iter().filter(|c| c.verdict == v).count();
            rows.push((
                "readiness checks",
                format!(
                    "{} ok, {} warn, {} fail, {} unknown",
                    count(Verdict::Ok),
                    count(Verdict::Warn),
                    count(Verdict::Fail),
                    count(Verdict::Unknown)
                ),
            ));
            rows
        }
        // Imported or synthetic runs hold what their source wrote (rt-tests' sysinfo:
        // nodename, release, version, machine, realtime): show what is there.
        Err(_) => source_system_rows(&r.system),
    }
}

/// The System table of an imported run, from the source's own system information.
fn source_system_rows(system: &serde_json::Value) -> Vec<(&'static str, String)> {
    let text = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| system.get(*k))
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
    };
    let mut rows = vec![(
        "host",
        text(&["nodename", "hostname"]).unwrap_or_else(|| "unknown".into()),
    )];
    if let Some(release) = text(&["release", "kernel_release"]) {
        let machine = text(&["machine"]).map_or(String::new(), |m| format!(" ({m})"));
        rows.push(("kernel", format!("{release}{machine}")));
    }
    if let Some(version) = text(&["version"]) {
        rows.push(("kernel build", version));
    }
    if let Some(rt) = system.get("realtime").and_then(serde_json::Value::as_i64) {
        let shown = if rt != 0 { "yes (PREEMPT_RT)" } else { "no" };
        rows.push(("realtime kernel", shown.into()));
    }
    rows
}

fn cpu_table(h: &mut String, r: &RunRecord) {
    h.push_str("<h3>Per CPU</h3>");
    if r.kind.spec().time_lost {
        // Gaps of a loop that never sleeps: noise share, gaps, loop cost; by cause with --trace.
        h.push_str(
            &Html {
                class: "numbers cpus",
            }
            .render(&super::super::noise::table(r)),
        );
        h.push_str("<p class=\"note\">A gap is the time between two clock reads of a loop that never sleeps, above the threshold; noise is their sum.</p>\n");
        if let Some(table) = super::super::noise::causes_table(r) {
            h.push_str("<h3>Noise by cause</h3>");
            h.push_str(&super::super::noise::html_cause_bars(r));
            h.push_str(&Html { class: "numbers" }.render(&table));
        }
        return;
    }
    h.push_str(
        &Html {
            class: "numbers cpus",
        }
        .render(&cpu_tables::latency(r, Detail::Full)),
    );
    h.push_str("<p class=\"note\">min, mean, stddev and max are exact; percentiles come from the run's HDR histogram (within 0.1%). \
        A missed period is a wakeup that came a whole period or more late.</p>\n");
}

/// Per phase (its span and loads, once) the figures of each CPU; above 16 CPUs each phase's
/// worst and the rest (`report::phases`), with every CPU's rows below, folded.
fn phases_table(h: &mut String, r: &RunRecord) {
    if r.phases.is_empty() {
        return;
    }
    h.push_str("<h3>Phases</h3>");
    grouped_table(
        h,
        "numbers phases",
        "every CPU of each phase",
        |every_cpu| crate::report::phases::table(r, Detail::Full, every_cpu),
    );
}

/// A per-CPU table scaled to the number of CPUs: `table(false)` (worst CPUs and `+N` rows,
/// with their notes), and when that left CPUs out, `table(true)` (every CPU) in a `<details>`
/// element, folded (no script: the browser opens it) under `fold`.
fn grouped_table(
    h: &mut String,
    class: &str,
    fold: &str,
    table: impl Fn(bool) -> (Table, Vec<String>),
) {
    let (grouped, notes) = table(false);
    h.push_str(&Html { class }.render(&grouped));
    if notes.is_empty() {
        return;
    }
    for note in &notes {
        let _ = write!(h, "<p class=\"note\">{}</p>", escape(note));
    }
    let _ = writeln!(
        h,
        "<details class=\"every-cpu\"><summary>{}</summary>{}</details>",
        escape(fold),
        Html { class }.render(&table(true).0)
    );
}

fn loads_table(h: &mut String, r: &RunRecord) {
    if r.loads.is_empty() {
        return;
    }
    let mut table = Table::new(["load", "throughput"], Align::Left);
    for l in &r.loads {
        let figures: Vec<String> = l.throughput.iter().map(|t| t.to_string()).collect();
        table.push_row(vec![Cell::code(l.spec.as_str()), figures.join(", ").into()]);
    }
    h.push_str("<h3>Loads</h3>");
    h.push_str(&Html { class: "loads" }.render(&table));
}

fn trace_section(h: &mut String, run: &RunDigest) {
    // The worst explanations kept (report::events_digest), every one tallied by cause.
    let mut spikes: Vec<_> = run.events.explained.iter().collect();
    let Some(t) = &run.record.trace else {
        if spikes.is_empty() {
            return;
        }
        h.push_str("<h3>Explained spikes</h3>");
        super::causes::section(h, &run.record, &run.events.causes);
        spikes_table(h, run, &mut spikes);
        return;
    };
    h.push_str("<h3>Kernel trace</h3>");
    key_values(
        h,
        "trace",
        &[
            ("explained above", format_ns(t.explain_above_ns)),
            (
                &format!("{} explained", run.record.kind.words().explained),
                t.explained.to_string(),
            ),
            ("trace events lost", t.events_lost.to_string()),
            ("tracefs instance", t.instance.clone()),
        ],
    );
    if has_split(&run.record) {
        h.push_str(SPLIT_HEADING);
        grouped_table(h, "numbers split", "every CPU", |every_cpu| {
            cpu_tables::latency_split(&run.record, every_cpu)
                .map(|(t, note)| (t, note.into_iter().collect()))
                .unwrap_or_default()
        });
    }
    super::causes::section(h, &run.record, &run.events.causes);
    spikes_table(h, run, &mut spikes);
}

/// Whether the run has a `--trace` split table: a latency run with timer IRQ latencies.
fn has_split(r: &RunRecord) -> bool {
    r.kind.spec().irq_split && r.threads.iter().any(|t| t.irq_latency.is_some())
}

const SPLIT_HEADING: &str = "<h4>Latency split</h4><p class=\"note\">IRQ: how late the timer \
    interrupt came after the timer's expiry; thread: from the expiry to the thread running in \
    user space; no split: samples without a matching trace event.</p>";

fn spikes_table(
    h: &mut String,
    run: &RunDigest,
    spikes: &mut Vec<&crate::format::events::SpikeExplanation>,
) {
    if spikes.is_empty() {
        return;
    }
    spikes.sort_by_key(|s| std::cmp::Reverse(s.latency_ns));
    let _ = write!(
        h,
        "<p>The {} {} explained, worst first{}.</p>",
        spikes.len().min(MAX_SPIKES_LISTED),
        run.record.kind.words().worst,
        if run.events.causes.all > MAX_SPIKES_LISTED as u64 {
            format!(" (of {})", run.events.causes.all)
        } else {
            String::new()
        }
    );
    let mut table = Table::new(
        [
            "at",
            "CPU",
            run.record.kind.words().sample,
            "timer IRQ",
            "thread",
            "verdict",
            "held the CPU",
        ],
        Align::Left,
    );
    for s in spikes.iter().take(MAX_SPIKES_LISTED) {
        let contributors: Vec<String> = s
            .contributors
            .iter()
            .map(|c| {
                format!(
                    "{} {}{} {}",
                    c.kind,
                    c.name,
                    c.pid.map_or(String::new(), |p| format!(" (pid {p})")),
                    format_ns(c.duration_ns)
                )
            })
            .collect();
        table.push_row(vec![
            format_elapsed(s.due_ns.saturating_sub(run.record.start_monotonic_ns)).into(),
            s.cpu.to_string().into(),
            format_ns_signed(s.latency_ns).into(),
            signed(s.irq_latency_ns).into(),
            signed(s.thread_latency_ns).into(),
            s.verdict.as_str().into(),
            contributors.join("; ").into(),
        ]);
    }
    h.push_str(&Html { class: "spikes" }.render(&table));
    let listed = &spikes[..spikes.len().min(MAX_SPIKES_LISTED)];
    super::stacks::section(
        h,
        run.record.start_monotonic_ns,
        run.record.duration_ns,
        listed,
    );
}
