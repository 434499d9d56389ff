//! `--on-threshold`, `--on-end`, `--action-gap`, `--action-wait` and `--snapshot-limit` to an
//! [`ActionPlan`] (`run`, `sweep`, `monitor`): each action parsed and checked against this
//! system before anything starts.

use crate::error::{Failure, Result};
use crate::plan::actions::{self, Action, ActionPlan};
use crate::plan::options::ActionOptions;

/// `--on-threshold`, `--on-end` and `--action-gap`: spelled right (exit 2) and possible here
/// (the program exists, the process is ours to signal: exit 2 too, before anything starts).
pub(crate) fn resolve_actions(args: &ActionOptions) -> Result<ActionPlan> {
    let parse = |flag: &str, texts: &[String], on_end: bool| {
        texts
            .iter()
            .map(|t| {
                let a = Action::parse(t, on_end)
                    .and_then(|a| a.check_system().map(|_| a))
                    .map_err(|e| Failure::usage(format!("{flag} {t}: {e}")))?;
                Ok(a)
            })
            .collect::<Result<Vec<Action>>>()
    };
    if args.action_wait.is_some() && args.on_threshold.is_empty() && args.on_end.is_empty() {
        return Err(Failure::usage(
            "--action-wait: there is no --on-threshold or --on-end action to wait for",
        ));
    }
    let on_threshold = parse("--on-threshold", &args.on_threshold, false)?;
    if args.snapshot_limit.is_some()
        && !on_threshold
            .iter()
            .any(|a| matches!(a, Action::Snapshot { .. }))
    {
        return Err(Failure::usage(
            "--snapshot-limit: there is no --on-threshold snapshot to bound",
        ));
    }
    Ok(ActionPlan {
        on_threshold,
        on_end: parse("--on-end", &args.on_end, true)?,
        gap_ns: match &args.action_gap {
            Some(t) => actions::parse_gap(t).map_err(Failure::usage)?,
            None => actions::DEFAULT_ACTION_GAP_NS,
        },
        wait_ns: match &args.action_wait {
            Some(t) => actions::parse_wait(t).map_err(Failure::usage)?,
            None => actions::DEFAULT_ACTION_WAIT_NS,
        },
        snapshot_limit_bytes: match &args.snapshot_limit {
            Some(t) => actions::parse_snapshot_limit(t).map_err(Failure::usage)?,
            None => actions::DEFAULT_SNAPSHOT_LIMIT_BYTES,
        },
    })
}
