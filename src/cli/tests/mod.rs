//! The command line to the plan's option groups: what each measuring command's parse gives
//! `plan::build`, and the defaults the drop-ins start from being the commands' own.

mod noise;
mod run;

use super::{Cli, Command};
use crate::plan::options::{LatencyRunOptions, NoiseRunOptions};
use clap::Parser;

fn parsed(argv: &[&str]) -> Command {
    Cli::try_parse_from(argv).unwrap().command
}

/// The drop-ins build their plans from the groups' `Default` with their own options set; that
/// default must be `jitterlab run`'s (and `noise`'s) without options, or a drop-in would
/// measure with settings no command line gives. Compared field by field through `Debug`.
#[test]
fn the_groups_defaults_are_the_commands_defaults() {
    let Command::Run(run) = parsed(&["jitterlab", "run"]) else {
        unreachable!()
    };
    assert_eq!(
        format!("{:?}", run.options()),
        format!("{:?}", LatencyRunOptions::default())
    );
    assert_eq!(
        format!("{:?}", run.action_options()),
        format!("{:?}", crate::plan::options::ActionOptions::default())
    );
    let Command::Noise(noise) = parsed(&["jitterlab", "noise"]) else {
        unreachable!()
    };
    assert_eq!(
        format!("{:?}", noise.options()),
        format!("{:?}", NoiseRunOptions::default())
    );
    // And the sweep's level, a monitor: the same latency group.
    let Command::Monitor(monitor) = parsed(&["jitterlab", "monitor"]) else {
        unreachable!()
    };
    assert_eq!(
        format!("{:?}", monitor.options().latency),
        format!("{:?}", LatencyRunOptions::default().latency)
    );
}
