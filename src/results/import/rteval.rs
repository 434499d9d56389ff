//! rteval's `summary.xml` (its report): the cyclictest measurement module writes, in us,
//!
//! ```text
//! /rteval/run_info[@days @hours @minutes @seconds]
//! /rteval/SystemInfo/uname/{node, kernel[@is_RT], arch}
//! /rteval/Measurements/cyclictest[@command_line]
//!     abort_report[@reason]/breaktrace[@latency_threshold @measured_latency]   (if stopped)
//!     system[@description]/{statistics, histogram}      all CPUs together
//!     core[@id @priority]/{statistics, histogram}       one per measured CPU
//! statistics: samples, minimum, maximum, median, mode, range, mean,
//!             mean_absolute_deviation, standard_deviation
//! histogram:  bucket[@index (us) @value (count)], the non-empty ones
//! ```
//!
//! rteval builds the histogram from cyclictest's `-h N` rows, without its overflows: a report
//! whose maximum passed N has no statistics at all (rteval skips them), which is refused. The
//! `system` element is checked against the cores (samples add up, same min and max); run.json
//! keeps per-CPU figures only.

use super::{
    Imported, Parser, SourceFormat, SourceHistogram, SourceThread, add_counts, cyclictest_facts,
    option_value,
};
use super::{Recognise, Recognised};
use roxmltree::{Document, Node};

pub(crate) static FORMAT: SourceFormat = SourceFormat {
    name: "rteval",
    help: "rteval's summary.xml (its cyclictest measurement: per-CPU and system statistics and histograms)",
    parse: Parser::Text(parse),
    recognise: Recognise::Text(recognise),
    no_header: None,
};

fn recognise(lines: &[&str]) -> Recognised {
    Recognised::from(lines.iter().any(|l| l.starts_with("<rteval")))
}

/// The first child element named `name`.
fn child<'a>(node: Node<'a, 'a>, name: &str) -> Option<Node<'a, 'a>> {
    node.children().find(|n| n.has_tag_name(name))
}

/// The number in the child element `name` of `node`.
fn number(node: Node, name: &str) -> Result<Option<f64>, String> {
    child(node, name)
        .map(|n| {
            let text = n.text().unwrap_or("").trim();
            text.parse::<f64>()
                .map_err(|_| format!("<{name}> holds '{text}', not a number"))
        })
        .transpose()
}

/// One `system` or `core` element: its statistics and histogram, in us.
fn histogram(node: Node, histogram_end: u64) -> Result<SourceHistogram, String> {
    let stats = child(node, "statistics").ok_or("no <statistics>")?;
    let samples = number(stats, "samples")?
        .filter(|s| s.fract() == 0.0 && *s >= 0.0)
        .ok_or("no whole <samples> count")? as u64;
    let mut buckets = Vec::new();
    if let Some(h) = child(node, "histogram") {
        for b in h.children().filter(|n| n.has_tag_name("bucket")) {
            let attr = |name: &str| -> Result<u64, String> {
                b.attribute(name)
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| format!("a <bucket> without a whole '{name}'"))
            };
            buckets.push((attr("index")?, attr("value")?));
        }
    }
    buckets.sort_unstable();
    let in_buckets = add_counts(buckets.iter().map(|&(_, c)| c))?;
    if in_buckets != samples {
        return Err(format!(
            "its histogram holds {in_buckets} samples but <samples> says {samples}"
        ));
    }
    Ok(SourceHistogram {
        unit_ns: 1000,
        buckets,
        overflow: 0,
        overflow_from: histogram_end,
        count: Some(samples),
        min: number(stats, "minimum")?,
        mean: number(stats, "mean")?,
        max: number(stats, "maximum")?,
        stddev: number(stats, "standard_deviation")?,
        quantiles: Vec::new(),
    })
}

pub(crate) fn parse(text: &str) -> Result<Imported, String> {
    let start = text.find('<').ok_or("it is not XML")?;
    let doc = Document::parse(&text[start..]).map_err(|e| format!("it is not valid XML ({e})"))?;
    let root = doc.root_element();
    if !root.has_tag_name("rteval") {
        return Err(format!(
            "its root element is <{}>, not rteval's <rteval>",
            root.tag_name().name()
        ));
    }
    let measurements = child(root, "Measurements").ok_or("it has no <Measurements>")?;
    let cyclictest = child(measurements, "cyclictest").ok_or_else(|| {
        let found: Vec<&str> = measurements
            .children()
            .filter(|n| n.is_element())
            .map(|n| n.tag_name().name())
            .collect();
        format!(
            "it has no cyclictest measurement (found: {}); jitterlab reads rteval's cyclictest module",
            if found.is_empty() { "none".into() } else { found.join(", ") }
        )
    })?;
    let command_line: Vec<String> = cyclictest
        .attribute("command_line")
        .unwrap_or("")
        .split_whitespace()
        .map(String::from)
        .collect();
    let histogram_end: u64 = option_value(&command_line, "-h", "--histogram")
        .and_then(|h| h.parse().ok())
        .unwrap_or(3500);
    let mut threads = Vec::new();
    for core in cyclictest.children().filter(|n| n.has_tag_name("core")) {
        let cpu: usize = core
            .attribute("id")
            .and_then(|id| id.parse().ok())
            .ok_or("a <core> without a CPU number in 'id'")?;
        let h = histogram(core, histogram_end).map_err(|e| format!("core {cpu}: {e}"))?;
        threads.push(SourceThread::new(cpu, h));
    }
    let stopped = child(cyclictest, "abort_report").map(|a| {
        let breaktrace = child(a, "breaktrace");
        let attr = |name: &str| breaktrace.and_then(|b| b.attribute(name)).unwrap_or("?");
        format!(
            "rteval stopped cyclictest ({}): latency {} us above the threshold {} us",
            a.attribute("reason").unwrap_or("abort"),
            attr("measured_latency"),
            attr("latency_threshold")
        )
    });
    if threads.is_empty() {
        return Err(match stopped {
            Some(why) => format!("it has no per-CPU statistics: {why}"),
            None => format!(
                "its cyclictest measurement has no per-CPU statistics: rteval leaves them out when a latency passed the histogram's {histogram_end} us (-h); run rteval with more buckets"
            ),
        });
    }
    if let Some(system) = child(cyclictest, "system") {
        check_system(
            &histogram(system, histogram_end).map_err(|e| format!("system: {e}"))?,
            &threads,
        )?;
    }
    let info = child(root, "run_info");
    let seconds = |name: &str| {
        info.and_then(|i| i.attribute(name))
            .and_then(|v| v.parse::<u64>().ok())
    };
    let duration_ns = match (
        seconds("days"),
        seconds("hours"),
        seconds("minutes"),
        seconds("seconds"),
    ) {
        (Some(d), Some(h), Some(m), Some(s)) => d
            .checked_mul(86_400)
            .and_then(|d| d.checked_add(h.checked_mul(3600)?))
            .and_then(|t| t.checked_add(m.checked_mul(60)?))
            .and_then(|t| t.checked_add(s))
            .and_then(|t| t.checked_mul(1_000_000_000)),
        _ => None,
    };
    let mut facts = cyclictest_facts(&command_line);
    facts.duration_ns = None;
    Ok(Imported {
        command_line,
        duration_ns,
        stopped,
        facts,
        system: system_info(root),
        warnings: vec![
            "rteval's histogram leaves out cyclictest's overflows; a report with any has no statistics and is not imported".into(),
        ],
        ..Imported::new(&FORMAT, threads)
    })
}

/// The `system` element must be the cores together: samples add up, the same min and max.
fn check_system(system: &SourceHistogram, cores: &[SourceThread]) -> Result<(), String> {
    let samples = add_counts(cores.iter().map(|t| t.latency.samples()))?;
    let extreme = |f: fn(&SourceHistogram) -> Option<f64>, pick: fn(f64, f64) -> f64| {
        cores.iter().filter_map(|t| f(&t.latency)).reduce(pick)
    };
    let min = extreme(|h| h.min, f64::min);
    let max = extreme(|h| h.max, f64::max);
    if system.samples() != samples || system.min != min || system.max != max {
        return Err(format!(
            "its system statistics ({} samples, min {:?} us, max {:?} us) are not its cores together ({samples} samples, min {min:?} us, max {max:?} us)",
            system.samples(),
            system.min,
            system.max
        ));
    }
    Ok(())
}

/// SystemInfo/uname as rt-tests' sysinfo keys, so the report's System table shows it.
fn system_info(root: Node) -> serde_json::Value {
    let uname = child(root, "SystemInfo").and_then(|s| child(s, "uname"));
    let text = |name: &str| {
        uname
            .and_then(|u| child(u, name))
            .and_then(|n| n.text())
            .map(|t| t.trim().to_string())
    };
    let realtime = uname
        .and_then(|u| child(u, "kernel"))
        .and_then(|k| k.attribute("is_RT"))
        .and_then(|r| r.parse::<u8>().ok());
    let mut info = serde_json::Map::new();
    for (key, value) in [
        ("nodename", text("node").map(Into::into)),
        ("release", text("kernel").map(Into::into)),
        ("machine", text("arch").map(Into::into)),
        ("realtime", realtime.map(Into::into)),
    ] {
        if let Some(v) = value {
            info.insert(key.into(), v);
        }
    }
    serde_json::Value::Object(info)
}
