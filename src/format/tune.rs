//! tune.json: what a tune planned, changed, measured and concluded (docs/result-format.md,
//! "tune.json"; docs/tune.md). One declaration for both sides, as run.json's record is: `tune`
//! makes it and writes it after every arm (tune/record.rs: [`TuneRecord`]'s `new` and `write`,
//! and the effects of tune/effect.rs), and `report` of a tune directory reads it back
//! (report/tune.rs), a layer below `tune`. The reading side accepts the first tunes' files,
//! which lack `confidence`, `rank`, `unit`, `interval_method`, `together` and `deploy` (each
//! field's default says what such a file meant).

use serde::{Deserialize, Serialize};

/// The whole record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TuneRecord {
    /// The format's version (run.json's), first: the marker of a result directory.
    pub format: u32,
    /// The confidence of every interval (0.95; absent in the first tunes' files, 0.95 then too).
    #[serde(default = "default_confidence")]
    pub confidence: f64,
    pub cpus: Vec<usize>,
    /// Rounds of the baseline and every fix.
    pub rounds: usize,
    /// Each arm's length, ns (None: `--loops`).
    pub arm_duration_ns: Option<u64>,
    /// The fixes measured, with what each changes.
    pub measured: Vec<PlannedFix>,
    /// The fixes not measured, and why.
    pub not_measured: Vec<UnmeasuredFix>,
    /// Every arm run so far, in order.
    pub arms: Vec<ArmRecord>,
    /// Each measured fix against the baseline (after the rounds), in the ranking's order
    /// (tune/effect.rs `ranking`: best first).
    pub fixes: Vec<FixRecord>,
    /// The worthwhile fixes together against none (when there were two or more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub together: Option<Effect>,
    /// The deploy files written, in the tune directory.
    #[serde(default)]
    pub deploy: Vec<String>,
    /// How the tune ended; None in the files of tunes before the field (seventh hostile
    /// re-run, L7-h: an interrupted `tune --json` printed `fixes: []` and nothing saying why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<TuneEnded>,
    /// Why it ended so, when it did not complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_reason: Option<String>,
}

/// How a tune ended (tune.json `ended`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TuneEnded {
    /// Still running (the file is rewritten after every arm), or killed (SIGKILL, a crash)
    /// before it could say otherwise.
    Running,
    /// Every arm ran (or there was nothing to run), every fix judged.
    Completed,
    /// A SIGINT, SIGTERM or SIGHUP ended it before every arm ran: `fixes` is empty when it
    /// came before the rounds' end, `together` missing when it came after.
    Interrupted,
    /// An arm failed, or the tune could not go on (`end_reason` says which).
    Failed,
}

impl TuneEnded {
    /// As tune.json says it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            TuneEnded::Running => "running",
            TuneEnded::Completed => "completed",
            TuneEnded::Interrupted => "interrupted",
            TuneEnded::Failed => "failed",
        }
    }
}

fn default_confidence() -> f64 {
    0.95
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlannedFix {
    pub name: String,
    /// What it is now on this machine.
    pub now: String,
    /// The files it writes (`file = value`) or the run option it turns on.
    pub(crate) changes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UnmeasuredFix {
    pub name: String,
    pub why: String,
    pub needs_reboot: bool,
}

/// One arm.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ArmRecord {
    pub round: usize,
    /// `baseline`, a fix's name, or `together`.
    pub treatment: String,
    /// Its result directory, in the tune directory.
    pub dir: String,
    /// Its run.json `ended`.
    pub ended: String,
    /// The kernel files it changed, and whether each was set back.
    #[serde(default)]
    pub settings: Vec<SettingRecord>,
    /// What makes its figures other than its treatment's alone: another process's PM QoS
    /// request in force during it (the whole machine's, S1), from its run.json. Empty when
    /// nothing did (and in the files of tunes before it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// What happened to one kernel file an arm changed (session/settings.rs makes it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingRecord {
    /// Its absolute path.
    pub file: String,
    /// The value it had before (a choice file's selected word: `madvise` of
    /// `always [madvise] never`).
    pub before: String,
    /// The value written; None when the kernel refused it (`refused` says why).
    pub during: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// Written back to `before` at the end.
    pub(crate) restored: bool,
}

/// A fix's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FixRecord {
    /// Its place in the ranking, 1 first; 0 in the first tunes' files, whose order is the
    /// plan's.
    #[serde(default)]
    pub rank: usize,
    pub name: String,
    pub(crate) effect: Effect,
}

/// A fix's figures and verdict (tune/effect.rs computes them).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Effect {
    pub(crate) figures: Vec<Figure>,
    pub(crate) verdict: Verdict,
    /// Wakeups measured, baseline and with the fix.
    pub(crate) samples: [u64; 2],
}

/// The statistic of the rate of missed deadlines: wakeups over the deadline and periods
/// skipped, per hour of measuring thread time (tune/effect.rs).
pub(crate) const MISSED_RATE: &str = "missed deadlines /h";

/// [`MISSED_RATE`]'s name in the files of earlier tunes (twelfth hostile re-run, L12-c: the
/// name said wakeups over the deadline while the figure counted the skipped periods too, as it
/// has since stop 56; before that it counted the late wakeups alone). Read as [`MISSED_RATE`],
/// never written.
const MISSED_RATE_OLD: &str = "over deadline /h";

/// A figure's statistic as read: the rate's old name as its new one, so that every reader
/// compares by the one name.
fn statistic_name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let name = String::deserialize(d)?;
    Ok(match name.as_str() {
        MISSED_RATE_OLD => MISSED_RATE.to_string(),
        _ => name,
    })
}

impl Effect {
    /// Its figure of `statistic` (`p99`, `p99.9`, `max`, [`MISSED_RATE`]).
    pub(crate) fn figure(&self, statistic: &str) -> Option<&Figure> {
        self.figures.iter().find(|f| f.statistic == statistic)
    }
}

/// One figure of a fix against the baseline.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct Figure {
    /// `p99`, `p99.9`, `max` or [`MISSED_RATE`] (`missed deadlines /h`; files of tunes before
    /// it say `over deadline /h`, read as it).
    #[serde(deserialize_with = "statistic_name")]
    pub(crate) statistic: String,
    /// The unit of `baseline` and `with_fix`: `ns` for the latencies, `per hour` for the rate
    /// of missed deadlines (wakeups over the deadline and periods skipped, per hour of every
    /// measuring thread's time). The ratio and its interval have none. Absent in the first
    /// tunes' files.
    #[serde(default)]
    pub(crate) unit: Option<String>,
    /// The baseline's and the fix's value, in `unit`.
    pub(crate) baseline: Option<f64>,
    pub(crate) with_fix: Option<f64>,
    /// with_fix / baseline.
    pub(crate) ratio: Option<f64>,
    /// The ratio's 95 % interval; None on a side the data cannot bound (a maximum has none).
    pub(crate) ratio_low: Option<f64>,
    pub(crate) ratio_high: Option<f64>,
    /// How the interval was made: `bootstrap+rounds` or `order-statistic+rounds` for the
    /// percentiles, `clopper-pearson+rounds` for the rate (the interval within the pooled arms,
    /// compare.md's or the exact conditional interval of a ratio of two Poisson rates, widened
    /// to hold the paired t interval of the rounds' log ratios: tune/effect.rs); None for the
    /// maximum, which has no interval. Tunes before the rounds' interval wrote the within-arm
    /// method alone.
    #[serde(default)]
    pub(crate) interval_method: Option<String>,
}

impl Figure {
    /// The interval lies wholly below 1: the fix lowers it beyond chance.
    pub(crate) fn lowered(&self) -> bool {
        self.ratio_high.is_some_and(|h| h < 1.0)
    }
    /// The interval lies wholly above 1: the fix raises it beyond chance.
    pub(crate) fn raised(&self) -> bool {
        self.ratio_low.is_some_and(|l| l > 1.0)
    }
}

/// The verdict on a fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Verdict {
    /// p99.9 or the rate of missed deadlines lowered beyond chance, and nothing raised: worth applying.
    Worthwhile,
    /// Every interval holds no change.
    NoMeasurableEffect,
    /// p99, p99.9 or the rate of missed deadlines raised beyond chance: do not apply it.
    Harmful,
    /// Some figures lowered and others raised: read the figures.
    Mixed,
}

impl Verdict {
    /// As the terminal table and the report say it.
    pub(crate) fn words(self) -> &'static str {
        match self {
            Verdict::Worthwhile => "worth applying",
            Verdict::NoMeasurableEffect => "no measurable effect",
            Verdict::Harmful => "harmful: do not apply",
            Verdict::Mixed => "mixed: read the figures",
        }
    }
}

impl TuneRecord {
    /// The record as tune.json holds it and `tune --json` prints it.
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).expect("tune records serialise")
    }
}
