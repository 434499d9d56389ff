//! tune.json made and written: the record (`format::tune::TuneRecord`, declared there for the
//! writer here and the report's reader alike) begun from the plan, the fixes ranked, and the
//! file written after every arm, so that a tune stopped half-way keeps what its finished arms
//! say (docs/tune.md).

use super::TunePlan;
use super::fixes::{Change, PlanChange};
use crate::error::{OrFailure, Result};
use crate::format::run_record::FORMAT;
use crate::format::tune::{Effect, FixRecord, PlannedFix, TuneEnded, TuneRecord, UnmeasuredFix};
use crate::results::{ResultDir, TUNE_FILE_NAME};

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
                    name: m.fix.name.to_string(),
                    now: m.now.clone(),
                    changes: change_lines(&m.change),
                })
                .collect(),
            not_measured: plan
                .unmeasured
                .iter()
                .map(|u| UnmeasuredFix {
                    name: u.fix.name.to_string(),
                    why: u.why.clone(),
                    needs_reboot: u.needs_reboot,
                })
                .collect(),
            arms: Vec::new(),
            fixes: Vec::new(),
            together: None,
            deploy: Vec::new(),
            ended: Some(TuneEnded::Running),
            end_reason: None,
        }
    }

    /// Records how the tune ended.
    pub(crate) fn end(&mut self, ended: TuneEnded, reason: Option<String>) {
        self.ended = Some(ended);
        self.end_reason = reason;
    }

    /// Writes tune.json into `dir`, replacing the last one atomically.
    pub(crate) fn write(&self, dir: &ResultDir) -> Result<()> {
        let mut json = self.json().into_bytes();
        json.push(b'\n');
        dir.replace_file(TUNE_FILE_NAME, &json)
            .or_run(|| format!("cannot write {}", dir.file(TUNE_FILE_NAME).display()))
    }
}
