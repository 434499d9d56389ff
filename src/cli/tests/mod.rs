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

/// Every option that takes a duration or a size (its value name says so) takes a value that
/// starts with `-`, so that `--action-gap -1ms` reaches the option's own check ("out of range:
/// give 1ms to 24h", exit 2) instead of being read as cyclictest-habit short options (an mlock
/// hint) or clap's "unexpected argument" (issue 39, sixth re-run, L6-a). A new such option
/// without it fails here, naming it.
#[test]
fn every_duration_and_size_option_takes_a_negative_value_to_its_own_check() {
    use clap::CommandFactory;
    fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            let valued = arg.get_value_names().is_some_and(|names| {
                names
                    .iter()
                    .any(|n| n.starts_with("DURATION") || n.as_str() == "SIZE")
            });
            if valued && !arg.is_allow_hyphen_values_set() && !arg.is_allow_negative_numbers_set() {
                missing.push(format!("{path} --{}", arg.get_id()));
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, &format!("{path} {}", sub.get_name()), missing);
        }
    }
    let mut missing = Vec::new();
    walk(&Cli::command(), "jitterlab", &mut missing);
    assert!(
        missing.is_empty(),
        "add allow_hyphen_values = true: {missing:?}"
    );
    for (argv, said) in [
        (
            &[
                "jitterlab",
                "run",
                "--on-threshold",
                "continue",
                "--action-gap",
                "-1ms",
            ][..],
            "-1ms",
        ),
        (&["jitterlab", "run", "--action-wait", "-1s"][..], "-1s"),
    ] {
        let Command::Run(run) = parsed(argv) else {
            unreachable!()
        };
        let actions = run.action_options();
        assert!(
            actions.action_gap.as_deref() == Some(said)
                || actions.action_wait.as_deref() == Some(said),
            "{argv:?}"
        );
    }
}
