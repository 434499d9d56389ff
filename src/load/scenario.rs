//! Scenario files (`jitterlab run --scenario FILE.toml`): phases on a timeline, each with the
//! loads that run during it (the OCERA experiment: idle, then memory, I/O, /proc and fork load
//! switched on in turn while latency is measured). Format in docs/loads.md.
//!
//! Every error names the file, the line and the key, and what is accepted.

use super::LoadSpec;
use super::generator::GeneratorSpec;
use crate::cpulist::format_cpu_list;
use crate::units::{format_ns, parse_duration_ns};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// The largest scenario file read: hand-written scenarios are a few KiB, and a generated week
/// of one-minute phases (10 080 of them) about 1 MiB.
pub(crate) const MAX_FILE_BYTES: u64 = 4 << 20;
/// The most phases a scenario may have. Validation is linear, but every phase also becomes a
/// run.json record per measured CPU and a band in every plot; a timeline with more phases is
/// not one a reader can follow.
pub(crate) const MAX_PHASES: usize = 10_000;

/// A validated scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub path: PathBuf,
    /// The file's text as read once: what the run keeps as scenario.toml (never read again
    /// through the path, which may name another file by then).
    pub text: String,
    #[expect(
        dead_code,
        reason = "dead since pub(crate) (issue 41 sweep): read by no code; load's owner removes it"
    )]
    pub(crate) description: Option<String>,
    /// The run's length: `duration`, or the end of the last phase.
    pub length_ns: u64,
    pub phases: Vec<ScenarioPhase>,
}

#[derive(Debug, Clone)]
pub struct ScenarioPhase {
    pub label: String,
    /// Offsets from the run's start, ns. For a phase that ends after a number of wakeups (and
    /// every phase of its scenario), planned from the counted thread's interval
    /// ([`Scenario::lay_out`]): the run moves them to where the counts really ended.
    pub start_ns: u64,
    pub end_ns: u64,
    /// `wakeups = N`: the phase ends after N wakeups of the run's first measuring thread
    /// (thread 0, on the first CPU of `--cpus`), counted from when its loads are ready.
    pub wakeups: Option<u64>,
    pub loads: Vec<GeneratorSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    description: Option<String>,
    duration: Option<Spanned<String>>,
    #[serde(default)]
    phase: Vec<Spanned<RawPhase>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPhase {
    label: Option<Spanned<String>>,
    start: Option<Spanned<String>>,
    end: Option<Spanned<String>>,
    duration: Option<Spanned<String>>,
    wakeups: Option<Spanned<i64>>,
    #[serde(default)]
    loads: Vec<Spanned<String>>,
}

/// Reads and validates a scenario file against this system's online CPUs.
pub(crate) fn load_file(path: &Path, online: &[usize]) -> Result<Scenario, String> {
    // The caller prefixes "--scenario: ", as for every other scenario error.
    let text = crate::input::read_user_file(path, MAX_FILE_BYTES).map_err(|e| {
        format!(
            "{}: {e}; give the path of a scenario .toml file (see examples/ and docs/loads.md)",
            path.display()
        )
    })?;
    parse(&text, path, online)
}

/// Parses scenario text; `path` names it in errors.
pub fn parse(text: &str, path: &Path, online: &[usize]) -> Result<Scenario, String> {
    let file = path.display().to_string();
    let ctx = ErrorContext { file: &file, text };
    let raw: RawScenario = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| ctx.line(s).to_string()).unwrap_or_else(|| "?".into());
        format!(
            "{file}:{line}: {}; a scenario has `description`, `duration` and [[phase]] tables with `label`, `start`, `end`, `duration` or `wakeups`, and `loads`",
            e.message().trim()
        )
    })?;
    if raw.phase.is_empty() {
        return Err(format!(
            "{file}:1: no [[phase]] table; a scenario needs at least one phase, e.g. [[phase]] label = \"idle\" duration = \"10s\""
        ));
    }
    let total = raw
        .duration
        .as_ref()
        .map(|d| ctx.duration_of(d, "duration", "scenario"))
        .transpose()?;
    if total == Some(0) {
        return Err(ctx.err(
            raw.duration.as_ref().unwrap().span(),
            "scenario: key 'duration' must be above zero".into(),
        ));
    }
    let count = raw.phase.len();
    if count > MAX_PHASES {
        return Err(format!(
            "{file}:1: {count} [[phase]] tables, more than the {MAX_PHASES} a scenario may have; merge phases or split the experiment into several runs"
        ));
    }
    check_counted(&ctx, &raw)?;
    let phases = parse_phases(&ctx, &raw.phase, total, online)?;
    let last_end = phases.last().map_or(0, |p| p.end_ns);
    if let Some(t) = total
        && t < last_end
    {
        return Err(ctx.err(
            raw.duration.as_ref().unwrap().span(),
            format!(
                "scenario: key 'duration' ({} s) ends before the last phase ends ({} s); lengthen it or drop it (the run then ends with the last phase)",
                seconds(t),
                seconds(last_end)
            ),
        ));
    }
    Ok(Scenario {
        path: path.to_path_buf(),
        text: text.to_string(),
        description: raw.description,
        length_ns: total.unwrap_or(last_end),
        phases,
    })
}

/// The phases in order, each checked against the one before; `total` is the scenario's
/// `duration`, which the last phase may run on to.
fn parse_phases(
    ctx: &ErrorContext,
    raw_phases: &[Spanned<RawPhase>],
    total: Option<u64>,
    online: &[usize],
) -> Result<Vec<ScenarioPhase>, String> {
    let count = raw_phases.len();
    let mut phases: Vec<ScenarioPhase> = Vec::with_capacity(count);
    // Label -> phase index: one lookup per phase keeps validation linear in the phases.
    let mut labels: HashMap<&str, usize> = HashMap::with_capacity(count);
    for (i, sp) in raw_phases.iter().enumerate() {
        let label = unique_label(ctx, i, sp, &mut labels)?;
        let what = format!("phase {i} ('{label}')");
        let p = sp.get_ref();
        let previous_end = phases.last().map_or(0, |q| q.end_ns);
        let start_ns = phase_start(ctx, i, sp, &what, previous_end)?;
        let wakeups = phase_wakeups(ctx, sp, &what)?;
        // Only the last phase may run on to the scenario's `duration`.
        let open_end = total.filter(|_| i + 1 == count);
        let end_ns = match wakeups {
            // Planned at 1 ms a wakeup until the plan knows the interval (`lay_out`).
            Some(n) => start_ns.saturating_add(n.saturating_mul(1_000_000)),
            None => phase_end(ctx, sp, &what, start_ns, open_end)?,
        };
        let loads = p
            .loads
            .iter()
            .map(|l| phase_load(ctx, l, &what, online))
            .collect::<Result<_, _>>()?;
        phases.push(ScenarioPhase {
            label: label.to_string(),
            start_ns,
            end_ns,
            wakeups,
            loads,
        });
    }
    Ok(phases)
}

/// A scenario with a phase that ends after a number of wakeups is a sequence: its phases'
/// times are not known before the run, so no phase may name a `start` or an `end` on the
/// run's clock, and the run ends with its last phase (no scenario `duration`).
fn check_counted(ctx: &ErrorContext, raw: &RawScenario) -> Result<(), String> {
    let Some(first) = raw.phase.iter().position(|p| p.get_ref().wakeups.is_some()) else {
        return Ok(());
    };
    let why = format!(
        "phase {first} ends after a number of wakeups, so the phases' times are known only as the run goes"
    );
    if let Some(d) = &raw.duration {
        return Err(ctx.err(
            d.span(),
            format!(
                "scenario: key 'duration' cannot be given: {why}; the run ends when its last phase ends"
            ),
        ));
    }
    for (i, sp) in raw.phase.iter().enumerate() {
        let p = sp.get_ref();
        for (key, v) in [("start", &p.start), ("end", &p.end)] {
            if let Some(v) = v {
                return Err(ctx.err(
                    v.span(),
                    format!(
                        "phase {i}: key '{key}' cannot be given: {why}; give each phase a 'duration' or 'wakeups' (they follow one another)"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// `wakeups = N`: a whole number above zero, given instead of `end` and `duration`.
fn phase_wakeups(
    ctx: &ErrorContext,
    sp: &Spanned<RawPhase>,
    what: &str,
) -> Result<Option<u64>, String> {
    let p = sp.get_ref();
    let Some(w) = &p.wakeups else {
        return Ok(None);
    };
    if p.duration.is_some() || p.end.is_some() {
        return Err(ctx.err(
            w.span(),
            format!("{what}: key 'wakeups' given with 'duration' or 'end'; give one of them"),
        ));
    }
    match u64::try_from(*w.get_ref()) {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(ctx.err(
            w.span(),
            format!(
                "{what}: key 'wakeups' is {}; give a whole number of wakeups above zero, e.g. wakeups = 1000",
                w.get_ref()
            ),
        )),
    }
}

/// Names the file and line in every error message, so each step of the parse can report where
/// the scenario went wrong.
struct ErrorContext<'a> {
    file: &'a str,
    text: &'a str,
}

impl ErrorContext<'_> {
    fn line(&self, span: std::ops::Range<usize>) -> usize {
        line_of(self.text, span.start)
    }

    fn err(&self, span: std::ops::Range<usize>, msg: String) -> String {
        format!("{}:{}: {msg}", self.file, self.line(span))
    }

    fn duration_of(&self, v: &Spanned<String>, key: &str, what: &str) -> Result<u64, String> {
        parse_duration_ns(v.get_ref())
            .map_err(|e| self.err(v.span(), format!("{what}: key '{key}': {e}")))
    }
}

/// Phase `i`'s label: present, not blank, and not another phase's (labels name phases in
/// reports and comparisons).
fn unique_label<'r>(
    ctx: &ErrorContext,
    i: usize,
    sp: &'r Spanned<RawPhase>,
    labels: &mut HashMap<&'r str, usize>,
) -> Result<&'r str, String> {
    let Some(label) = &sp.get_ref().label else {
        return Err(ctx.err(
            sp.span(),
            format!(
                "phase {i}: key 'label' is missing; every phase needs a label, e.g. label = \"idle\""
            ),
        ));
    };
    let what = format!("phase {i} ('{}')", label.get_ref());
    if label.get_ref().trim().is_empty() {
        return Err(ctx.err(label.span(), format!("phase {i}: key 'label' is empty")));
    }
    if let Some(other) = labels.insert(label.get_ref(), i) {
        return Err(ctx.err(
            label.span(),
            format!("{what}: key 'label': phase {other} has the same label; labels must be unique"),
        ));
    }
    Ok(label.get_ref())
}

/// The phase's start: `start`, or the end of the phase before; never before that end, so the
/// phases are in time order and do not overlap.
fn phase_start(
    ctx: &ErrorContext,
    i: usize,
    sp: &Spanned<RawPhase>,
    what: &str,
    previous_end: u64,
) -> Result<u64, String> {
    let p = sp.get_ref();
    let start_ns = match &p.start {
        Some(s) => ctx.duration_of(s, "start", what)?,
        None => previous_end,
    };
    if start_ns < previous_end {
        let span = p.start.as_ref().map_or(sp.span(), |s| s.span());
        return Err(ctx.err(
            span,
            format!(
                "{what}: key 'start' ({} s) is before the end of phase {} ({} s): phases must not overlap and must be in time order",
                seconds(start_ns),
                i - 1,
                seconds(previous_end)
            ),
        ));
    }
    Ok(start_ns)
}

/// The phase's end: `end`, or `start` plus `duration`, or (`open_end`, the last phase only) the
/// scenario's `duration`; after the start.
fn phase_end(
    ctx: &ErrorContext,
    sp: &Spanned<RawPhase>,
    what: &str,
    start_ns: u64,
    open_end: Option<u64>,
) -> Result<u64, String> {
    let p = sp.get_ref();
    let end_ns = match (&p.end, &p.duration) {
        (Some(e), None) => ctx.duration_of(e, "end", what)?,
        (None, Some(d)) => start_ns
            .checked_add(ctx.duration_of(d, "duration", what)?)
            .ok_or_else(|| {
                ctx.err(
                    d.span(),
                    format!(
                        "{what}: key 'duration': the phase would end more than 584 years after the start"
                    ),
                )
            })?,
        (Some(_), Some(d)) => {
            return Err(ctx.err(
                d.span(),
                format!("{what}: key 'duration' given with 'end'; give one of them"),
            ));
        }
        (None, None) => open_end.ok_or_else(|| {
            ctx.err(
                sp.span(),
                format!(
                    "{what}: no 'end', 'duration' or 'wakeups'; give one (only the last phase may omit them, to run until the scenario's `duration`)"
                ),
            )
        })?,
    };
    if end_ns <= start_ns {
        let span = p
            .end
            .as_ref()
            .or(p.duration.as_ref())
            .map_or(sp.span(), |s| s.span());
        return Err(ctx.err(
            span,
            format!(
                "{what}: ends at {} s, not after its start at {} s; a phase must last more than zero",
                seconds(end_ns),
                seconds(start_ns)
            ),
        ));
    }
    Ok(end_ns)
}

/// One entry of a phase's `loads`: a generator (the spike load is run-wide), on online CPUs,
/// that this system can run.
fn phase_load(
    ctx: &ErrorContext,
    l: &Spanned<String>,
    what: &str,
    online: &[usize],
) -> Result<GeneratorSpec, String> {
    let e = |m: String| ctx.err(l.span(), format!("{what}: key 'loads': {m}"));
    let g = match LoadSpec::parse(l.get_ref()).map_err(e)? {
        LoadSpec::Generator(g) => g,
        LoadSpec::Spike(_) => {
            return Err(e(format!(
                "'{}': the spike load runs for the whole run; give it with --load instead",
                l.get_ref()
            )));
        }
    };
    if let Some(c) = g.listed_cpus().iter().find(|c| !online.contains(c)) {
        return Err(e(format!(
            "'{}': CPU {c} is not online; this system's online CPUs are {}",
            l.get_ref(),
            format_cpu_list(online)
        )));
    }
    g.check_system().map_err(e)?;
    Ok(g)
}

impl Scenario {
    /// Whether a phase ends after a number of wakeups (`wakeups = N`).
    pub(crate) fn counts_wakeups(&self) -> bool {
        self.phases.iter().any(|p| p.wakeups.is_some())
    }

    /// Plans a sequence with counted phases at `interval_ns` a wakeup of the counted thread:
    /// each counted phase `wakeups` x `interval_ns` long, every phase starting where the one
    /// before ends; `length_ns` their sum. A plan only: the run's phases end where their
    /// counts end. Nothing changes in a scenario without counted phases.
    ///
    /// A plan past `max_ns` (the longest run, `plan::MAX_DURATION_NS`: ten years) is refused,
    /// naming the phase that passes it, as a `--duration` past it is: such a phase would be cut
    /// short by the run's end and the phases after it never run (eleventh hostile re-run,
    /// L11-a: `wakeups = 100000000000` at 1 s was planned saturated at 2^64 ns and accepted).
    pub(crate) fn lay_out(&mut self, interval_ns: u64, max_ns: u64) -> Result<(), String> {
        if !self.counts_wakeups() {
            return Ok(());
        }
        let interval_ns = interval_ns.max(1);
        let mut at = 0u64;
        for (i, p) in self.phases.iter_mut().enumerate() {
            let length = match p.wakeups {
                Some(n) => n.checked_mul(interval_ns),
                None => Some(p.end_ns - p.start_ns),
            };
            let end = length
                .and_then(|l| at.checked_add(l))
                .filter(|&e| e <= max_ns);
            let Some(end) = end else {
                let (what, fix) = match p.wakeups {
                    Some(n) => (
                        format!(
                            "wakeups = {n} at an interval of {} ends {} after the run's start",
                            format_ns(interval_ns),
                            match length.and_then(|l| at.checked_add(l)) {
                                Some(e) => format!("{} s", seconds(e)),
                                None => "more than 584 years".to_string(),
                            }
                        ),
                        "give fewer wakeups or a shorter --interval",
                    ),
                    None => (
                        format!(
                            "its duration ends {} s after the run's start",
                            seconds(at.saturating_add(length.unwrap_or(u64::MAX)))
                        ),
                        "shorten the phases before it or this one",
                    ),
                };
                return Err(format!(
                    "{}: phase {i} ('{}'): {what}, past the longest run ({} s, 3650 days): the run would end before the phase and the phases after it never run; {fix}",
                    self.path.display(),
                    p.label,
                    seconds(max_ns)
                ));
            };
            p.start_ns = at;
            p.end_ns = end;
            at = end;
        }
        self.length_ns = at;
        Ok(())
    }

    /// Checks what needs the measured CPUs: `cpus=housekeeping` must leave CPUs for the loads.
    pub(crate) fn check_cpus(
        &self,
        measured: &[usize],
        online: &[usize],
        housekeeping: Option<&[usize]>,
    ) -> Result<(), String> {
        // run.json's budget for the per-phase statistics (issue 39: a record its own reader
        // would refuse is refused before the run instead).
        crate::format::record_budget::check_phase_values(self.phases.len(), measured.len())
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        for (i, p) in self.phases.iter().enumerate() {
            for g in &p.loads {
                g.common
                    .cpus
                    .resolve(online, measured, housekeeping)
                    .map_err(|e| {
                        format!(
                            "{}: phase {i} ('{}'): load '{}': {e}",
                            self.path.display(),
                            p.label,
                            g.text
                        )
                    })?;
            }
        }
        Ok(())
    }
}

fn seconds(ns: u64) -> String {
    let s = format!("{:.3}", ns as f64 / 1e9);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(text: &str) -> Result<Scenario, String> {
        parse(text, Path::new("s.toml"), &[0, 1])
    }

    #[test]
    fn phases_follow_one_another() {
        let s = parse_str(
            r#"
description = "test"
duration = "10s"
[[phase]]
label = "idle"
duration = "2s"
[[phase]]
label = "cpu"
loads = ["cpu:workers=1", "proc"]
end = "5s"
[[phase]]
label = "rest"
start = "6s"
"#,
        )
        .unwrap();
        assert_eq!(s.length_ns, 10_000_000_000);
        let b: Vec<(u64, u64)> = s.phases.iter().map(|p| (p.start_ns, p.end_ns)).collect();
        assert_eq!(
            b,
            vec![
                (0, 2_000_000_000),
                (2_000_000_000, 5_000_000_000),
                (6_000_000_000, 10_000_000_000)
            ]
        );
        assert_eq!(s.phases[1].loads.len(), 2);
    }

    #[test]
    fn errors_name_file_line_and_key() {
        for (text, needles) in [
            (
                "[[phase]]\nlabel = \"a\"\ncolour = \"red\"\n",
                &["s.toml:3:", "colour"][..],
            ),
            (
                "[[phase]]\nlabel = \"a\"\nduration = \"2 s\"\n",
                &["s.toml:3:", "'duration'", "'2 s'"],
            ),
            (
                "[[phase]]\nlabel = \"a\"\nduration = \"2s\"\n[[phase]]\nlabel = \"b\"\nstart = \"1s\"\nend = \"3s\"\n",
                &["s.toml:6:", "'start'", "overlap"],
            ),
            (
                "[[phase]]\nlabel = \"a\"\nduration = \"1s\"\nloads = [\"tornado\"]\n",
                &["s.toml:4:", "'loads'", "unknown load 'tornado'"],
            ),
            (
                "[[phase]]\nlabel = \"a\"\nduration = \"1s\"\nloads = [\"cpu:cpus=7\"]\n",
                &["s.toml:4:", "CPU 7 is not online"],
            ),
            (
                "[[phase]]\nlabel = \"a\"\nduration = \"1s\"\nloads = [\"spike:cpu=0\"]\n",
                &["s.toml:4:", "--load"],
            ),
            (
                "[[phase]]\nlabel = \"a\"\nstart = \"2s\"\nend = \"1s\"\n",
                &["s.toml:4:", "not after its start"],
            ),
            (
                "[[phase]]\nlabel = \"a\"\n",
                &["s.toml:1:", "no 'end', 'duration' or 'wakeups'"],
            ),
            ("duration = \"1s\"\n", &["no [[phase]]"]),
            (
                "[[phase]]\nlabel = \"a\"\nduration = \"1s\"\n[[phase]]\nlabel = \"a\"\nduration = \"1s\"\n",
                &["s.toml:5:", "same label"],
            ),
            (
                "duration = \"1s\"\n[[phase]]\nlabel = \"a\"\nduration = \"2s\"\n",
                &["s.toml:1:", "ends before the last phase"],
            ),
            ("[[phase]\n", &["s.toml:1:"]),
        ] {
            let e = parse_str(text).unwrap_err();
            for n in needles {
                assert!(e.contains(n), "{text:?}: '{n}' not in: {e}");
            }
        }
    }

    fn phases(n: usize) -> String {
        (0..n)
            .map(|i| format!("[[phase]]\nlabel = \"p{i}\"\nduration = \"1s\"\n"))
            .collect()
    }

    /// run.json's value budget (issue 39): 10 000 phases on 1024 CPUs would write 133 million
    /// values of per-phase statistics, a run.json its reader refuses; refused before the run.
    #[test]
    fn phases_times_cpus_stay_within_run_jsons_budget() {
        let online: Vec<usize> = (0..1024).collect();
        let s = parse_str(&phases(MAX_PHASES)).unwrap();
        s.check_cpus(&online[..64], &online, None).unwrap();
        let e = s.check_cpus(&online, &online, None).unwrap_err();
        assert!(
            e.contains("10000 phases on 1024 measured CPUs make 133 120 000 values")
                && e.contains("split the scenario"),
            "{e}"
        );
        let s = parse_str(&phases(630)).unwrap();
        s.check_cpus(&online, &online, None).unwrap();
    }

    #[test]
    fn phases_are_capped_and_checked_in_linear_time() {
        let e = parse_str(&phases(MAX_PHASES + 1)).unwrap_err();
        assert!(
            e.contains("10001 [[phase]] tables, more than the 10000"),
            "{e}"
        );
        // At the cap: accepted, and a repeated label is found by the last phase.
        let s = parse_str(&phases(MAX_PHASES)).unwrap();
        assert_eq!(s.phases.len(), MAX_PHASES);
        assert_eq!(s.length_ns, MAX_PHASES as u64 * 1_000_000_000);
        let mut text = phases(MAX_PHASES - 1);
        text.push_str("[[phase]]\nlabel = \"p0\"\nduration = \"1s\"\n");
        let e = parse_str(&text).unwrap_err();
        assert!(
            e.contains("phase 9999 ('p0')") && e.contains("phase 0 has the same label"),
            "{e}"
        );
    }

    #[test]
    fn files_are_read_with_a_size_cap() {
        let dir = tempfile::tempdir().unwrap();
        // A million phases: refused by its size before any parsing.
        let path = dir.path().join("million.toml");
        std::fs::write(&path, phases(1_000_000)).unwrap();
        let e = load_file(&path, &[0, 1]).unwrap_err();
        assert!(e.contains("larger than 4 MiB"), "{e}");
        assert!(
            e.starts_with(&format!("{}: it is larger", path.display())),
            "{e}"
        );
        // A device (or a FIFO) is refused before a byte is read (issue 24 D14).
        let e = load_file(Path::new("/dev/zero"), &[0, 1]).unwrap_err();
        assert!(
            e.contains("/dev/zero: it is a device, not a regular file"),
            "{e}"
        );
        // A byte-order mark (as some editors write) is not part of the TOML.
        let path = dir.path().join("bom.toml");
        std::fs::write(&path, format!("\u{feff}{}", phases(1))).unwrap();
        assert_eq!(load_file(&path, &[0, 1]).unwrap().phases.len(), 1);
    }

    #[test]
    fn a_phase_ending_beyond_the_clock_is_refused() {
        let e =
            parse_str("[[phase]]\nlabel = \"a\"\nstart = \"18446744073s\"\nduration = \"1s\"\n")
                .unwrap_err();
        assert!(e.contains("s.toml:4:") && e.contains("584 years"), "{e}");
    }

    #[test]
    fn every_example_parses() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                // Any machine: check CPUs against a generous list; memory sizes against this one.
                load_file(&path, &(0..4096).collect::<Vec<_>>())
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                n += 1;
            }
        }
        assert!(n >= 2, "examples/ holds the OCERA and OSADL scenarios");
    }

    /// L11-a: a counted phase whose plan passes the longest run (ten years) is refused, naming
    /// the phase; before, it was planned saturated at 2^64 ns (or cut at the cap) and accepted.
    #[test]
    fn a_counted_plan_past_the_longest_run_is_refused_naming_its_phase() {
        // plan::MAX_DURATION_NS (the plan's layer is above this one): ten years.
        const MAX: u64 = 3650 * 86_400_000_000_000;
        const S: u64 = 1_000_000_000;
        let counted = |n: u64| {
            parse_str(&format!(
                "[[phase]]\nlabel = \"a\"\nwakeups = 10\n[[phase]]\nlabel = \"b\"\nwakeups = {n}\n[[phase]]\nlabel = \"c\"\nduration = \"1s\"\n"
            ))
            .unwrap()
        };
        // 1e11 wakeups at 1 s: 3,169 years (passes 2^64 ns); 4e9 at 1 s: 126 years.
        for n in [100_000_000_000u64, 4_000_000_000] {
            let e = counted(n).lay_out(S, MAX).unwrap_err();
            assert!(
                e.contains("s.toml: phase 1 ('b'): wakeups = ") && e.contains("3650 days"),
                "{e}"
            );
            assert!(e.contains("fewer wakeups or a shorter --interval"), "{e}");
        }
        // The same count at a shorter interval fits, and is planned exactly.
        let mut s = counted(4_000_000_000);
        s.lay_out(1000, MAX).unwrap();
        assert_eq!(s.length_ns, 10 * 1000 + 4_000_000_000 * 1000 + S);
        // The plan at exactly the cap is accepted; one wakeup more at that interval is not.
        let per = MAX / 10;
        let mut s = parse_str("[[phase]]\nlabel = \"x\"\nwakeups = 10\n").unwrap();
        s.lay_out(per, MAX).unwrap();
        assert_eq!(s.length_ns, MAX);
        let mut s = parse_str("[[phase]]\nlabel = \"x\"\nwakeups = 11\n").unwrap();
        assert!(s.lay_out(per, MAX).is_err());
        // A timed phase after the counted ones that passes it is named too.
        let mut s = parse_str(
            "[[phase]]\nlabel = \"x\"\nwakeups = 10\n[[phase]]\nlabel = \"y\"\nduration = \"3650d\"\n",
        )
        .unwrap();
        let e = s.lay_out(S, MAX).unwrap_err();
        assert!(e.contains("phase 1 ('y'): its duration ends"), "{e}");
    }
}
