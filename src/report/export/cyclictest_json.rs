//! `--format cyclictest-json`: the run in the layout of `cyclictest --json` (rt-tests 2.x:
//! `rt_write_json` in src/lib/rt-utils.c writes the header and `sysinfo`, cyclictest's
//! `write_stats` the threads), so parsers written for cyclictest (LAVA's
//! `parse_rt_tests_results.py`, KernelCI's) take a jitterlab run unchanged.
//!
//! What differs from cyclictest's own file, and why:
//! - `cmdline:` is the cyclictest command line equivalent to the run's plan (parsers read
//!   options such as `-h` from it); jitterlab's own command line and version are in an extra
//!   top-level `jitterlab` object, and `rt_test_version:` names jitterlab's version, not an
//!   rt-tests one.
//! - Latencies are whole microseconds as cyclictest prints them without `-N`: `min` and `max`
//!   are the exact values truncated (as cyclictest truncates every sample); `avg` is the exact
//!   mean in us, where cyclictest averages the truncated samples (up to 1 us lower).
//! - `histogram` holds every sample (`-h` is one more than the largest `max`, so nothing
//!   overflows); a sample counts in the us bucket of its HDR bucket's lowest value (within
//!   0.1%), kept within the CPU's exact min and max. Early wakeups count in bucket 0.
//! - An import whose source histogram overflowed (run.json `imported.overflows`) keeps them
//!   as overflows, in rt-tests' own form: `-h` is the overflows' start (the least of the CPUs'),
//!   a thread's histogram leaves out its overflowed samples (the largest it recorded) and every
//!   bucket at or above `-h`, and `cycles` minus the histogram's sum is what lies beyond it. So
//!   a reader (jitterlab's import too) gets a lower bound, never the overflows' start as their
//!   value (tenth hostile re-run, X2: re-imported, the bound was gone and `--budget p99<50us`
//!   passed at 30 us for a run whose mean was 50 ms).
//! - `node` (the NUMA node) is left out: the run does not record it.

use super::exporter::RunExporter;
use super::output::write_text;
use super::system_facts::SystemFacts;
use crate::error::{Failure, Result};
use crate::format::run_record::{RunRecord, ThreadSummary};
use crate::results::loaded::LoadedRun;
use hdrhistogram::Histogram;
use std::fmt::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

pub(crate) struct CyclictestJson;

/// A JSON string literal.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).expect("strings serialise")
}

/// ns as cyclictest's whole microseconds: truncated toward zero, as its `calcdiff` does.
fn whole_us(ns: i64) -> i64 {
    ns / 1000
}

/// The per-us bucket counts of a CPU's histogram, ascending, zero buckets left out.
fn us_buckets(h: &Histogram<u64>, min_us: i64, max_us: i64) -> Vec<(i64, u64)> {
    let mut out: Vec<(i64, u64)> = Vec::new();
    for v in h.iter_recorded() {
        let lowest = h.lowest_equivalent(v.value_iterated_to()) as i64;
        let us = whole_us(lowest).clamp(min_us, max_us.max(min_us));
        match out.last_mut() {
            Some((last, count)) if *last == us => *count += v.count_at_value(),
            _ => out.push((us, v.count_at_value())),
        }
    }
    out
}

/// RFC 2822 time as rt-tests writes it (`strftime("%a, %d %b %Y %T %z")`), in UTC.
pub(crate) fn rfc2822(t: SystemTime) -> Option<String> {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = t.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs();
    let days = secs / 86_400;
    let rest = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's days_from_civil, inverted).
    let z = days as i64 + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    Some(format!(
        "{}, {day:02} {} {year} {:02}:{:02}:{:02} +0000",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    ))
}

/// The cyclictest options that ask for what the run did, as far as run.json says. An import's
/// plan is unknown (`imported.absent` lists it): then only threads, CPUs and histogram.
fn equivalent_command_line(r: &RunRecord, histogram_us: i64) -> String {
    let plan_known = !r
        .imported
        .as_ref()
        .is_some_and(|i| i.absent.iter().any(|a| a == "plan"));
    let p = &r.plan;
    let mut args = vec!["cyclictest".to_string()];
    if plan_known {
        if p.mlock {
            args.push("-m".into());
        }
        args.push(format!("--policy={}", p.policy));
        args.push(format!("-p{}", p.priority));
        args.push(format!("-i{}", p.interval_ns / 1000));
        if p.distance_ns > 0 {
            args.push(format!("-d{}", p.distance_ns / 1000));
        }
    }
    args.push(format!("-t{}", r.threads.len()));
    let cpus: Vec<String> = r.threads.iter().map(|t| t.cpu.to_string()).collect();
    args.push(format!("-a{}", cpus.join(",")));
    args.push(format!("-h{histogram_us}"));
    if plan_known {
        match (p.loops, p.duration_ns) {
            (Some(loops), _) => args.push(format!("-l{loops}")),
            (None, Some(d)) => args.push(format!("-D{}", d.div_ceil(1_000_000_000))),
            (None, None) => {}
        }
    }
    args.join(" ")
}

/// `buckets` without the `overflowed` largest samples (an import's overflows, recorded at the
/// top of its histogram) and without any bucket at or above `cut_us` (`-h`): what lies beyond
/// the written histogram, as rt-tests counts it.
fn below_overflows(
    mut buckets: Vec<(i64, u64)>,
    overflowed: u64,
    cut_us: Option<i64>,
) -> Vec<(i64, u64)> {
    let mut left = overflowed;
    while left > 0 {
        let Some((_, count)) = buckets.last_mut() else {
            break;
        };
        let taken = left.min(*count);
        *count -= taken;
        left -= taken;
        if *count == 0 {
            buckets.pop();
        }
    }
    if let Some(cut) = cut_us {
        buckets.retain(|&(us, _)| us < cut);
    }
    buckets
}

/// One thread's object, indented as `write_stats` indents it; `overflowed`: its samples an
/// import's source held only as overflows, and `cut_us` the written histogram's end (`-h`).
fn thread_object(
    out: &mut String,
    index: usize,
    t: &ThreadSummary,
    h: Option<&Histogram<u64>>,
    overflowed: u64,
    cut_us: Option<i64>,
) {
    let l = &t.latency;
    let min_us = whole_us(l.min_ns.unwrap_or(0));
    // An imported source may give a minimum and no maximum: never a range that ends below
    // its start (run.json's reader refuses a minimum above the maximum).
    let max_us = whole_us(l.max_ns.unwrap_or(0)).max(min_us);
    let _ = writeln!(out, "    \"{index}\": {{");
    if let Some(h) = h {
        let buckets = below_overflows(us_buckets(h, min_us, max_us), overflowed, cut_us);
        let rows: Vec<String> = buckets
            .iter()
            .map(|(us, n)| format!("        \"{us}\": {n}"))
            .collect();
        let _ = writeln!(out, "      \"histogram\": {{");
        if !rows.is_empty() {
            let _ = writeln!(out, "{}", rows.join(",\n"));
        }
        let _ = writeln!(out, "      }},");
    }
    // The exact mean, kept within the truncated min and max a parser checks it against.
    let avg = l
        .mean_ns
        .map_or(0.0, |m| (m / 1e3).clamp(min_us as f64, max_us as f64));
    let _ = writeln!(out, "      \"cycles\": {},", l.samples);
    let _ = writeln!(out, "      \"min\": {min_us},");
    let _ = writeln!(out, "      \"max\": {max_us},");
    let _ = writeln!(out, "      \"avg\": {avg:.2},");
    let _ = writeln!(out, "      \"cpu\": {}", t.cpu);
    let _ = write!(out, "    }}");
}

/// The file of a run.
pub(crate) fn render(run: &LoadedRun) -> Result<String> {
    let r = &run.record;
    if r.threads.is_empty() {
        return Err(Failure::usage(format!(
            "{} has no per-CPU results in run.json (the run ended '{}' before writing them): nothing to export",
            run.path.display(),
            r.ended.as_str()
        )));
    }
    let histograms: Vec<Option<Histogram<u64>>> = r
        .threads
        .iter()
        .map(|t| run.merged_histogram(&format!("cpu{}", t.cpu)))
        .collect();
    for (t, h) in r.threads.iter().zip(&histograms) {
        if let Some(h) = h.as_ref().filter(|h| h.len() != t.latency.samples) {
            eprintln!(
                "jitterlab: warning: CPU {}: latency.hlog holds {} samples, run.json {}; the histogram is written as stored",
                t.cpu,
                h.len(),
                t.latency.samples
            );
        }
    }
    let largest_max_us = r
        .threads
        .iter()
        .filter_map(|t| t.latency.max_ns)
        .map(whole_us)
        .max()
        .unwrap_or(0);
    // An import's overflows, per thread, and where the written histograms end: the least
    // overflow start (one `-h` for every thread).
    let overflowed = |cpu: usize| {
        r.imported.as_ref().map_or(0, |i| {
            i.overflows
                .iter()
                .filter(|o| o.cpu == cpu && o.column == "latency")
                .map(|o| o.samples)
                .sum::<u64>()
        })
    };
    let cut_us = r.imported.as_ref().and_then(|i| {
        r.threads
            .iter()
            .filter_map(|t| i.latency_overflow_from(t.cpu))
            .min()
            .map(|ns| whole_us(ns as i64))
    });
    let facts = SystemFacts::of(r);
    let started = humantime::parse_rfc3339_weak(&r.started_utc).ok();
    let ended = r
        .ended_utc
        .as_deref()
        .and_then(|e| humantime::parse_rfc3339_weak(e).ok())
        .or_else(|| Some(started? + Duration::from_nanos(r.duration_ns?)));

    let mut out = String::new();
    out.push_str("{\n");
    let _ = writeln!(out, "  \"file_version\": 1,");
    let _ = writeln!(
        out,
        "  \"cmdline:\": {},",
        quoted(&equivalent_command_line(
            r,
            cut_us.unwrap_or(largest_max_us.max(0) + 1)
        ))
    );
    let _ = writeln!(
        out,
        "  \"rt_test_version:\": {},",
        quoted(&format!("jitterlab {}", r.jitterlab_version))
    );
    if let Some(s) = started.and_then(rfc2822) {
        let _ = writeln!(out, "  \"start_time\": {},", quoted(&s));
    }
    if let Some(e) = ended.and_then(rfc2822) {
        let _ = writeln!(out, "  \"end_time\": {},", quoted(&e));
    }
    let failed = r.ended == crate::format::run_record::Ended::Failed;
    let _ = writeln!(out, "  \"return_code\": {},", i32::from(failed));
    let _ = writeln!(out, "  \"sysinfo\": {{");
    let _ = writeln!(out, "    \"sysname\": \"Linux\",");
    let _ = writeln!(out, "    \"nodename\": {},", quoted(&facts.host));
    let _ = writeln!(out, "    \"release\": {},", quoted(&facts.kernel_release));
    let _ = writeln!(out, "    \"version\": {},", quoted(&facts.kernel_version));
    let _ = writeln!(out, "    \"machine\": {},", quoted(&facts.machine));
    let _ = writeln!(out, "    \"realtime\": {}", u8::from(facts.is_realtime()));
    let _ = writeln!(out, "  }},");
    let _ = writeln!(out, "  \"num_threads\": {},", r.threads.len());
    let _ = writeln!(out, "  \"resolution_in_ns\": 0,");
    let _ = writeln!(out, "  \"thread\": {{");
    for (i, (t, h)) in r.threads.iter().zip(&histograms).enumerate() {
        thread_object(&mut out, i, t, h.as_ref(), overflowed(t.cpu), cut_us);
        out.push_str(if i + 1 < r.threads.len() { ",\n" } else { "\n" });
    }
    let _ = writeln!(out, "  }},");
    let _ = writeln!(out, "  \"jitterlab\": {{");
    let _ = writeln!(out, "    \"version\": {},", quoted(&r.jitterlab_version));
    let _ = writeln!(
        out,
        "    \"command_line\": {},",
        quoted(&r.command_line.join(" "))
    );
    let _ = writeln!(
        out,
        "    \"run_dir\": {}",
        quoted(&run.path.display().to_string())
    );
    let _ = writeln!(out, "  }}");
    out.push_str("}\n");
    Ok(out)
}

impl RunExporter for CyclictestJson {
    fn write(&self, run: &LoadedRun, output: Option<&Path>) -> Result<()> {
        write_text(output, &render(run)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::stats::new_histogram;

    #[test]
    fn rfc2822_as_strftime_writes_it() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_352_723);
        assert_eq!(rfc2822(t).unwrap(), "Sun, 22 Nov 2026 13:05:23 +0000");
        assert_eq!(
            rfc2822(SystemTime::UNIX_EPOCH).unwrap(),
            "Thu, 01 Jan 1970 00:00:00 +0000"
        );
        let leap = SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc2822(leap).unwrap(), "Tue, 29 Feb 2000 00:00:00 +0000");
    }

    #[test]
    fn buckets_truncate_to_whole_us_within_min_and_max() {
        let mut h = new_histogram();
        h.record_n(11_999, 3).unwrap();
        h.record_n(12_000, 2).unwrap();
        h.record(0).unwrap(); // an early wakeup
        assert_eq!(
            us_buckets(&h, -2, 12),
            vec![(0, 1), (11, 3), (12, 2)],
            "11.999 us is 11 us, as cyclictest truncates"
        );
    }

    #[test]
    fn an_imports_overflows_are_left_out_of_the_histogram_from_the_top() {
        // 10 samples at 5 us, 989 overflows recorded at their start (30 us) and one at the
        // source's max (99942 us): the histogram keeps the 10, and cycles minus its sum is 990.
        let buckets = vec![(5, 10), (30, 989), (99_942, 1)];
        assert_eq!(
            below_overflows(buckets.clone(), 990, Some(30)),
            vec![(5, 10)]
        );
        // A thread without overflows of its own loses every bucket at or above -h (another
        // CPU's overflow start): they become overflows, a lower bound, never a wrong value.
        let other = vec![(5, 10), (29, 2), (40, 3)];
        assert_eq!(below_overflows(other, 0, Some(30)), vec![(5, 10), (29, 2)]);
        // Overflows recorded just below the start (an HDR bucket's lowest value) are still the
        // largest samples, taken from the top.
        let shifted = vec![(5, 10), (29, 989), (99_942, 1)];
        assert_eq!(below_overflows(shifted, 990, Some(30)), vec![(5, 10)]);
        // No import: everything stays.
        assert_eq!(below_overflows(buckets.clone(), 0, None), buckets);
    }
}
