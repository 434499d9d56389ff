//! tune.json: what a tune planned, changed, measured and concluded (docs/tune.md). Written
//! after every arm, so that a tune stopped half-way keeps what its finished arms say.

use super::TunePlan;
use super::effect::Effect;
use super::fixes::{Change, PlanChange};
use crate::error::{OrFailure, Result};
use crate::format::run_record::FORMAT;
use crate::results::{ResultDir, TUNE_FILE_NAME};
use crate::session::settings::SettingRecord;
use serde::Serialize;

/// The whole record.
#[derive(Debug, Clone, Serialize)]
pub struct TuneRecord {
    /// The format's version (run.json's), first: the marker of a result directory.
    pub format: u32,
    /// The confidence of every interval (0.95).
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
    /// (effect::ranking: best first).
    pub fixes: Vec<FixRecord>,
    /// The worthwhile fixes together against none (when there were two or more).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub together: Option<Effect>,
    /// The deploy files written, in the tune directory.
    pub deploy: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PlannedFix {
    pub name: &'static str,
    /// What it is now on this machine.
    pub now: String,
    /// The files it writes (`file = value`) or the run option it turns on.
    pub(crate) changes: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct UnmeasuredFix {
    pub name: &'static str,
    pub why: String,
    pub needs_reboot: bool,
}

/// One arm.
#[derive(Debug, Clone, Serialize)]
pub struct ArmRecord {
    pub round: usize,
    /// `baseline`, a fix's name, or `together`.
    pub treatment: String,
    /// Its result directory, in the tune directory.
    pub dir: String,
    /// Its run.json `ended`.
    pub ended: String,
    /// The kernel files it changed, and whether each was set back.
    pub settings: Vec<SettingRecord>,
}

/// A fix's result.
#[derive(Debug, Clone, Serialize)]
pub struct FixRecord {
    /// Its place in the ranking, 1 first.
    pub rank: usize,
    pub name: String,
    pub(crate) effect: Effect,
}

/// The fixes' records from their effects (in the plan's order), ranked: in the ranking's
/// order, each with its rank.
pub fn ranked(names: &[&str], effects: Vec<Effect>) -> Vec<FixRecord> {
    let order = super::effect::ranking(&effects.iter().collect::<Vec<_>>());
    let mut effects: Vec<Option<Effect>> = effects.into_iter().map(Some).collect();
    order
        .iter()
        .enumerate()
        .map(|(k, &i)| FixRecord {
            rank: k + 1,
            name: names[i].to_string(),
            effect: effects[i].take().expect("each index once"),
        })
        .collect()
}

/// What a change writes or turns on, one line each.
pub(crate) fn change_lines(change: &Change) -> Vec<String> {
    match change {
        Change::Settings(s) => s
            .iter()
            .map(|s| format!("/{} = {}", s.file, s.value))
            .collect(),
        Change::Plan(PlanChange::PmQos) => vec!["--pm-qos 0".into()],
        Change::Plan(PlanChange::CpusetPartition) => vec!["--cpuset-partition".into()],
    }
}

impl TuneRecord {
    pub(crate) fn new(plan: &TunePlan) -> TuneRecord {
        TuneRecord {
            format: FORMAT,
            confidence: crate::analysis::compare::CONFIDENCE,
            cpus: plan.base.cpus.clone(),
            rounds: plan.rounds,
            arm_duration_ns: plan.base.length.duration_ns(),
            measured: plan
                .measured
                .iter()
                .map(|m| PlannedFix {
                    name: m.fix.name,
                    now: m.now.clone(),
                    changes: change_lines(&m.change),
                })
                .collect(),
            not_measured: plan
                .unmeasured
                .iter()
                .map(|u| UnmeasuredFix {
                    name: u.fix.name,
                    why: u.why.clone(),
                    needs_reboot: u.needs_reboot,
                })
                .collect(),
            arms: Vec::new(),
            fixes: Vec::new(),
            together: None,
            deploy: Vec::new(),
        }
    }

    /// The record as tune.json holds it and `tune --json` prints it.
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).expect("tune records serialise")
    }

    /// Writes tune.json into `dir`, replacing the last one atomically.
    pub(crate) fn write(&self, dir: &ResultDir) -> Result<()> {
        let mut json = self.json().into_bytes();
        json.push(b'\n');
        dir.replace_file(TUNE_FILE_NAME, &json)
            .or_run(|| format!("cannot write {}", dir.file(TUNE_FILE_NAME).display()))
    }
}
