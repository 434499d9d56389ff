//! The HTML page: a header and table of contents, one section per argument (a run or a sweep),
//! the overlays and ratio table when there are several runs. Every number comes from run.json
//! or sweep.json (tables) or from the interval histograms (plots), always with its unit.

use super::{Input, run_label};
use crate::report::digest::RunDigest;
use crate::report::plot::Figure;
use crate::report::svg::escape;
use crate::results::events::Event;
use crate::results::run_record::RunRecord;
use crate::results::sweep::SweepRecord;
use crate::system::{SystemSnapshot, Verdict};
use crate::units::{format_elapsed, format_ns, format_ns_signed};
use std::fmt::Write;

const STYLE: &str = include_str!("style.css");

/// Spike explanations listed per run (the latest ones first would hide the worst: sorted by
/// latency, largest first).
const MAX_SPIKES_LISTED: usize = 50;

pub(super) fn render(inputs: &[Input], runs: &[&RunDigest], overlays: &[Figure]) -> String {
    let mut h = String::with_capacity(1 << 20);
    let title = match inputs {
        [Input::Run { digest, .. }] => format!("jitterlab report: {}", digest.path.display()),
        [Input::Sweep { path, .. }] => format!("jitterlab sweep report: {}", path.display()),
        _ => format!("jitterlab report: {} result directories", inputs.len()),
    };
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"generator\" content=\"jitterlab {}\">\
         <title>{}</title><style>{STYLE}</style></head><body><main>\n<h1>{}</h1>\n",
        env!("CARGO_PKG_VERSION"),
        escape(&title),
        escape(&title)
    );
    let _ = writeln!(
        h,
        "<p class=\"meta\">Made by jitterlab {} from the result directories below. Latencies are how late a \
         wakeup came after it was due; ns, us (microseconds) and ms as marked.</p>",
        env!("CARGO_PKG_VERSION")
    );
    h.push_str("<nav><h2>Contents</h2><ul>");
    let mut run_i = 0;
    let mut sweep_i = 0;
    for input in inputs {
        match input {
            Input::Run { digest, .. } => {
                run_i += 1;
                let _ = write!(
                    h,
                    "<li><a href=\"#run{run_i}\">{}</a></li>",
                    escape(&run_label(run_i - 1, digest))
                );
            }
            Input::Sweep { path, .. } => {
                sweep_i += 1;
                let _ = write!(
                    h,
                    "<li><a href=\"#sweep{sweep_i}\">sweep {sweep_i}: {}</a></li>",
                    escape(&path.display().to_string())
                );
            }
        }
    }
    if runs.len() >= 2 {
        h.push_str("<li><a href=\"#comparison\">comparison of the runs</a></li>");
    }
    h.push_str("</ul></nav>\n");
    if runs.len() >= 2 {
        comparison(&mut h, runs, overlays);
    }
    let (mut run_i, mut sweep_i) = (0, 0);
    for input in inputs {
        match input {
            Input::Run { digest, figures } => {
                run_i += 1;
                run_section(&mut h, run_i, digest, figures);
            }
            Input::Sweep {
                path,
                record,
                figures,
            } => {
                sweep_i += 1;
                sweep_section(&mut h, sweep_i, path, record, figures);
            }
        }
    }
    h.push_str("</main></body></html>\n");
    h
}

fn figure(h: &mut String, f: &Figure) {
    let _ = write!(
        h,
        "<figure id=\"fig-{}\" class=\"plot\">{}<figcaption><strong>{}</strong>",
        escape(&f.name),
        f.svg,
        escape(&f.title)
    );
    if !f.statements.is_empty() {
        h.push_str("<ul class=\"statements\">");
        for s in &f.statements {
            let _ = write!(h, "<li>{}</li>", escape(s));
        }
        h.push_str("</ul>");
    }
    let _ = writeln!(
        h,
        "<span class=\"plot-name\">plot {}</span></figcaption></figure>",
        escape(&f.name)
    );
}

/// A two-column table of (key, value).
fn key_values(h: &mut String, class: &str, rows: &[(&str, String)]) {
    let _ = write!(h, "<table class=\"kv {class}\">");
    for (k, v) in rows {
        let _ = write!(h, "<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v));
    }
    h.push_str("</table>\n");
}

fn opt_ns(v: Option<u64>) -> String {
    v.map_or("-".into(), format_ns)
}

fn opt_ns_signed(v: Option<i64>) -> String {
    v.map_or("-".into(), format_ns_signed)
}

fn run_section(h: &mut String, number: usize, run: &RunDigest, figures: &[Figure]) {
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
            "<div class=\"budget {}\"><h3>Budget <code>{}</code>: {}</h3><table><tr><th>clause</th><th>result</th><th>measured</th></tr>",
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
        h.push_str("</table></div>\n");
    }
    warnings(h, r);
    h.push_str("<div class=\"columns\"><div><h3>Plan</h3>");
    key_values(h, "plan", &plan_rows(r));
    h.push_str("</div><div><h3>System</h3>");
    key_values(h, "system", &system_rows(r));
    h.push_str("</div></div>\n");
    cpu_table(h, r);
    phases_table(h, r);
    loads_table(h, r);
    trace_section(h, run);
    if !run.has_hlog {
        h.push_str("<p class=\"note\">This directory has no latency.hlog: there are no plots, only run.json's figures.</p>");
    }
    for f in figures {
        figure(h, f);
    }
    h.push_str("</section>\n");
}

fn warnings(h: &mut String, r: &RunRecord) {
    let checks: Vec<(String, String)> = serde_json::from_value::<SystemSnapshot>(r.system.clone())
        .map(|s| {
            s.checks
                .into_iter()
                .filter(|c| matches!(c.verdict, Verdict::Warn | Verdict::Fail))
                .map(|c| {
                    (
                        c.verdict.as_str().to_string(),
                        format!("{}: {}", c.id, c.evidence),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    if r.warnings.is_empty() && checks.is_empty() && r.end_reason.is_none() {
        return;
    }
    h.push_str(
        "<div class=\"warnings\"><h3>Warnings (conditions that affect these results)</h3><ul>",
    );
    if let Some(reason) = &r.end_reason {
        let _ = write!(
            h,
            "<li class=\"fail\">the run ended {}: {}</li>",
            r.ended.as_str(),
            escape(reason)
        );
    }
    for w in &r.warnings {
        let _ = write!(h, "<li>{}</li>", escape(w));
    }
    for (verdict, text) in checks {
        let _ = write!(
            h,
            "<li class=\"{verdict}\">readiness check {verdict}: {}</li>",
            escape(&text)
        );
    }
    h.push_str("</ul></div>\n");
}

fn plan_rows(r: &RunRecord) -> Vec<(&'static str, String)> {
    let p = &r.plan;
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
            format!("{} {}", p.policy.to_uppercase(), p.priority),
        ),
        ("wake method", format!("{} ({} clock)", p.wake, p.clock)),
        ("interval", format_ns(p.interval_ns)),
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
    rows.push(("log interval", format_ns(p.log_interval_ns)));
    rows.push((
        "loads",
        if p.loads.is_empty() {
            "none".into()
        } else {
            p.loads.join("; ")
        },
    ));
    rows.push(("memory locked", yes_no(r.environment.memory_locked)));
    rows.push((
        "PM QoS",
        match (r.environment.pm_qos.held_us, &r.environment.pm_qos.error) {
            (Some(us), _) => format!("/dev/cpu_dma_latency held at {us} us"),
            (None, Some(e)) => format!("not held: {e}"),
            (None, None) => "left alone".into(),
        },
    ));
    rows.push(("sample log", yes_no(p.samples)));
    rows.push(("started (UTC)", r.started_utc.clone()));
    rows.push((
        "ended",
        match r.duration_ns {
            Some(d) => format!("{} after {}", r.ended.as_str(), format_elapsed(d)),
            None => r.ended.as_str().to_string(),
        },
    ));
    rows.push(("jitterlab", r.jitterlab_version.clone()));
    rows.push(("command line", r.command_line.join(" ")));
    rows
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
        // Imported or synthetic runs hold what they know: show the host name if any.
        Err(_) => vec![(
            "host",
            r.system
                .get("hostname")
                .and_then(|v| v.as_str())
                .unwrap_or("unknown")
                .to_string(),
        )],
    }
}

fn cpu_table(h: &mut String, r: &RunRecord) {
    let irq = r.threads.iter().any(|t| t.irq_latency.is_some());
    h.push_str(
        "<h3>Per CPU</h3><table class=\"numbers cpus\"><tr><th>CPU</th><th>samples</th><th>min</th>\
         <th>mean</th><th>stddev</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>p99.99</th>\
         <th>max</th><th>missed periods</th><th>dropped</th><th>deadline misses</th><th>early</th>",
    );
    if irq {
        h.push_str("<th>timer IRQ p99</th><th>timer IRQ max</th>");
    }
    h.push_str("</tr>");
    for t in &r.threads {
        let l = &t.latency;
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} (&gt; {})</td><td>{}</td>",
            t.cpu,
            l.samples,
            opt_ns_signed(l.min_ns),
            l.mean_ns
                .map_or("-".into(), |m| format_ns_signed(m.round() as i64)),
            l.stddev_ns
                .map_or("-".into(), |s| format_ns(s.round() as u64)),
            opt_ns(l.p50_ns),
            opt_ns(l.p90_ns),
            opt_ns(l.p99_ns),
            opt_ns(l.p999_ns),
            opt_ns(l.p9999_ns),
            opt_ns_signed(l.max_ns),
            t.missed_periods,
            t.dropped_records,
            t.deadline_misses,
            format_ns(t.deadline_ns),
            t.early_wakeups
        );
        if irq {
            let i = t.irq_latency.as_ref();
            let _ = write!(
                h,
                "<td>{}</td><td>{}</td>",
                opt_ns(i.and_then(|i| i.p99_ns)),
                opt_ns_signed(i.and_then(|i| i.max_ns))
            );
        }
        h.push_str("</tr>");
    }
    h.push_str("</table>\n<p class=\"note\">min, mean, stddev and max are exact; percentiles come from the run's HDR histogram (within 0.1%). \
        A missed period is a wakeup that came a whole period or more late.</p>\n");
}

fn phases_table(h: &mut String, r: &RunRecord) {
    if r.phases.is_empty() {
        return;
    }
    h.push_str("<h3>Phases</h3><table class=\"numbers phases\"><tr><th>phase</th><th>from</th><th>to</th><th>loads</th><th>CPU</th><th>samples</th><th>p50</th><th>p99</th><th>p99.9</th><th>max</th></tr>");
    for p in &r.phases {
        let from = p.start_ns.saturating_sub(r.start_monotonic_ns);
        let to = p.end_ns.saturating_sub(r.start_monotonic_ns);
        for (k, t) in p.threads.iter().enumerate() {
            let l = &t.latency;
            if k == 0 {
                let n = p.threads.len();
                let _ = write!(
                    h,
                    "<tr><td rowspan=\"{n}\">{}</td><td rowspan=\"{n}\">{}</td><td rowspan=\"{n}\">{}</td><td rowspan=\"{n}\">{}</td>",
                    escape(&p.label),
                    format_elapsed(from),
                    format_elapsed(to),
                    escape(&if p.loads.is_empty() {
                        "none".to_string()
                    } else {
                        p.loads.join("; ")
                    })
                );
            } else {
                h.push_str("<tr>");
            }
            let _ = write!(
                h,
                "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                t.cpu,
                l.samples,
                opt_ns(l.p50_ns),
                opt_ns(l.p99_ns),
                opt_ns(l.p999_ns),
                opt_ns_signed(l.max_ns)
            );
        }
    }
    h.push_str("</table>\n");
}

fn loads_table(h: &mut String, r: &RunRecord) {
    if r.loads.is_empty() {
        return;
    }
    h.push_str("<h3>Loads</h3><table class=\"loads\"><tr><th>load</th><th>throughput</th></tr>");
    for l in &r.loads {
        let figures: Vec<String> = l.throughput.iter().map(|t| t.to_string()).collect();
        let _ = write!(
            h,
            "<tr><td><code>{}</code></td><td>{}</td></tr>",
            escape(&l.spec),
            escape(&figures.join(", "))
        );
    }
    h.push_str("</table>\n");
}

fn trace_section(h: &mut String, run: &RunDigest) {
    let mut spikes: Vec<_> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::SpikeExplained(x) => Some(x),
            _ => None,
        })
        .collect();
    let Some(t) = &run.record.trace else {
        if spikes.is_empty() {
            return;
        }
        h.push_str("<h3>Explained spikes</h3>");
        spikes_table(h, run, &mut spikes);
        return;
    };
    h.push_str("<h3>Kernel trace</h3>");
    key_values(
        h,
        "trace",
        &[
            ("explained above", format_ns(t.explain_above_ns)),
            ("spikes explained", t.explained.to_string()),
            ("trace events lost", t.events_lost.to_string()),
            ("tracefs instance", t.instance.clone()),
        ],
    );
    spikes_table(h, run, &mut spikes);
}

fn spikes_table(
    h: &mut String,
    run: &RunDigest,
    spikes: &mut Vec<&crate::results::events::SpikeExplanation>,
) {
    if spikes.is_empty() {
        return;
    }
    spikes.sort_by_key(|s| std::cmp::Reverse(s.latency_ns));
    let _ = write!(
        h,
        "<p>The {} latest wakeups explained, worst first{}.</p><table class=\"spikes\"><tr><th>at</th><th>CPU</th><th>latency</th><th>timer IRQ</th><th>thread</th><th>verdict</th><th>held the CPU</th></tr>",
        spikes.len().min(MAX_SPIKES_LISTED),
        if spikes.len() > MAX_SPIKES_LISTED {
            format!(" (of {})", spikes.len())
        } else {
            String::new()
        }
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
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            format_elapsed(s.due_ns.saturating_sub(run.record.start_monotonic_ns)),
            s.cpu,
            format_ns_signed(s.latency_ns),
            opt_ns_signed(s.irq_latency_ns),
            opt_ns_signed(s.thread_latency_ns),
            escape(&s.verdict),
            escape(&contributors.join("; "))
        );
    }
    h.push_str("</table>\n");
}

/// One row of the ratio table: a figure per run.
struct Metric {
    name: &'static str,
    values: Vec<Option<f64>>,
    latency: bool,
}

/// "42x lower", "1.3x higher", "same", against the first run.
pub(crate) fn ratio_text(first: f64, other: f64) -> String {
    if first == other {
        return "same".into();
    }
    if first <= 0.0 || other <= 0.0 {
        return if other < first {
            "lower".into()
        } else {
            "higher".into()
        };
    }
    let (r, word) = if other < first {
        (first / other, "lower")
    } else {
        (other / first, "higher")
    };
    if r < 1.005 {
        "same".into()
    } else if r >= 10.0 {
        format!("{r:.0}x {word}")
    } else {
        format!("{r:.2}x {word}")
    }
}

fn comparison(h: &mut String, runs: &[&RunDigest], overlays: &[Figure]) {
    let merged: Vec<_> = runs.iter().map(|r| r.all_cpus_histogram()).collect();
    let q = |quantile: f64| -> Vec<Option<f64>> {
        merged
            .iter()
            .map(|m| (!m.is_empty()).then(|| m.value_at_quantile(quantile) as f64))
            .collect()
    };
    let metrics = vec![
        Metric {
            name: "p50",
            values: q(0.5),
            latency: true,
        },
        Metric {
            name: "p99",
            values: q(0.99),
            latency: true,
        },
        Metric {
            name: "p99.9",
            values: q(0.999),
            latency: true,
        },
        Metric {
            name: "p99.99",
            values: q(0.9999),
            latency: true,
        },
        Metric {
            name: "max",
            values: runs
                .iter()
                .map(|r| {
                    r.record
                        .threads
                        .iter()
                        .filter_map(|t| t.latency.max_ns)
                        .max()
                        .map(|v| v as f64)
                })
                .collect(),
            latency: true,
        },
        Metric {
            name: "missed periods",
            values: runs
                .iter()
                .map(|r| {
                    Some(
                        r.record
                            .threads
                            .iter()
                            .map(|t| t.missed_periods)
                            .sum::<u64>() as f64,
                    )
                })
                .collect(),
            latency: false,
        },
    ];
    h.push_str("<section id=\"comparison\" class=\"comparison\"><h2>Comparison of the runs</h2>");
    h.push_str("<p>All CPUs of each run together; ratios are to the first run. Percentiles come from the interval histograms (within 0.1%), max and missed periods from run.json.</p>");
    h.push_str("<table class=\"numbers ratios\"><tr><th>figure</th>");
    for (i, r) in runs.iter().enumerate() {
        let _ = write!(h, "<th>{}</th>", escape(&run_label(i, r)));
    }
    h.push_str("</tr>");
    for m in &metrics {
        let _ = write!(h, "<tr><th>{}</th>", m.name);
        for (i, v) in m.values.iter().enumerate() {
            let shown = match v {
                None => "-".to_string(),
                Some(v) if m.latency => format_ns_signed(*v as i64),
                Some(v) => format!("{v}"),
            };
            let ratio = match (i, m.values[0], v) {
                (0, _, _) => String::new(),
                (_, Some(first), Some(v)) => {
                    format!(
                        " <span class=\"ratio\">({} {})</span>",
                        m.name,
                        ratio_text(first, *v)
                    )
                }
                _ => String::new(),
            };
            let _ = write!(h, "<td>{}{ratio}</td>", escape(&shown));
        }
        h.push_str("</tr>");
    }
    h.push_str("</table>\n");
    for f in overlays {
        figure(h, f);
    }
    h.push_str("</section>\n");
}

fn sweep_section(
    h: &mut String,
    number: usize,
    path: &std::path::Path,
    s: &SweepRecord,
    figures: &[Figure],
) {
    let _ = write!(
        h,
        "<section id=\"sweep{number}\" class=\"sweep\"><h2>Sweep {number}: <code>{}</code></h2><p class=\"path\">{}</p>",
        escape(&s.load_template),
        escape(&path.display().to_string())
    );
    h.push_str("<table class=\"numbers levels\"><tr><th>level</th><th>run</th><th>throughput</th><th>CPU</th><th>samples</th><th>min</th><th>p99</th><th>max</th><th>missed periods</th></tr>");
    for row in &s.rows {
        let n = row.threads.len().max(1);
        let tp: Vec<String> = row.throughput.iter().map(|t| t.to_string()).collect();
        let _ = write!(
            h,
            "<tr><td rowspan=\"{n}\">{}</td><td rowspan=\"{n}\">{}{}</td><td rowspan=\"{n}\">{}</td>",
            escape(&row.level),
            escape(&row.run_dir),
            if path.join(&row.run_dir).join("run.json").is_file() {
                ""
            } else {
                " (missing)"
            },
            escape(&tp.join(", "))
        );
        if row.threads.is_empty() {
            h.push_str("<td colspan=\"6\">no measurements</td></tr>");
        }
        for (k, t) in row.threads.iter().enumerate() {
            if k > 0 {
                h.push_str("<tr>");
            }
            let _ = write!(
                h,
                "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                t.cpu,
                t.samples,
                opt_ns_signed(t.min_ns),
                opt_ns(t.p99_ns),
                opt_ns_signed(t.max_ns),
                t.missed_periods
            );
        }
    }
    h.push_str("</table>\n");
    for f in figures {
        figure(h, f);
    }
    h.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_read_as_sentences() {
        assert_eq!(ratio_text(4_200_000.0, 100_000.0), "42x lower");
        assert_eq!(ratio_text(100.0, 130.0), "1.30x higher");
        assert_eq!(ratio_text(100.0, 100.2), "same");
        assert_eq!(ratio_text(0.0, 3.0), "higher");
        assert_eq!(ratio_text(0.0, 0.0), "same");
    }
}
