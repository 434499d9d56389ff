//! The measuring commands' `--help` against what they accept (issue 25, the composed CLI): each
//! of `run`, `sweep`, `monitor` and `noise` lists only options it accepts, lists every option it
//! accepts, in sections; `monitor` offers none of the options of a run that ends, `noise` none of
//! the latency options, `sweep` no scenario; and what they do not have is refused by clap with
//! exit 2.

use crate::common::{jitterlab, text};
use clap::{CommandFactory, Parser};
use std::collections::BTreeSet;

const MEASURING: [&str; 4] = ["run", "sweep", "monitor", "noise"];

/// The options `monitor` never took: each ends a run or grows without bound.
const NOT_MONITOR: [&str; 7] = [
    "duration",
    "loops",
    "scenario",
    "samples",
    "summary-every",
    "interval-step",
    "json",
];

/// The options of a wakeup: a loop that never sleeps has none of them.
const LATENCY_ONLY: [&str; 13] = [
    "wake",
    "interval",
    "distance",
    "interval-step",
    "deadline",
    "under",
    "loops",
    "sender-cpu",
    "sender-priority",
    "ipc-between",
    "ipc-pace",
    "hold",
    "hog",
];

fn help(command: &str, flag: &str) -> String {
    let out = jitterlab(&[command, flag]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{command} {flag}: {}",
        text(&out)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The long options the option lines of `help` name: clap writes `  -x, --name` or
/// `      --name` there, while a line of help text that wraps onto a `--flag` is indented
/// further.
fn listed_options(help: &str) -> BTreeSet<String> {
    help.lines()
        .filter_map(|line| {
            let option = match line.strip_prefix("  -") {
                Some(short) if !short.starts_with('-') => short.get(3..)?,
                _ => line.strip_prefix("      ")?,
            };
            let name: String = option
                .strip_prefix("--")?
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

fn subcommand(name: &str) -> clap::Command {
    jitterlab::cli::Cli::command()
        .find_subcommand(name)
        .unwrap_or_else(|| panic!("no subcommand {name}"))
        .clone()
}

/// The value an option is given in a parse: its default, its first possible value, or `1`
/// (a whole number, a duration's digits, a CPU: text the parser takes; its meaning is checked
/// later, by the command).
fn sample_value(arg: &clap::Arg) -> String {
    if let Some(default) = arg.get_default_values().first() {
        return default.to_string_lossy().into_owned();
    }
    match arg.get_possible_values().first() {
        Some(value) => value.get_name().to_string(),
        None => "1".into(),
    }
}

fn takes_value(arg: &clap::Arg) -> bool {
    arg.get_action().takes_values()
}

/// Every option a measuring command's `--help` lists is one of its arguments, and every argument
/// it has (but `--help`) is listed: the help and the parser are the same list.
#[test]
fn each_help_lists_exactly_the_options_its_command_has() {
    for name in MEASURING {
        let listed = listed_options(&help(name, "--help"));
        let accepted: BTreeSet<String> = subcommand(name)
            .get_arguments()
            .filter(|a| !a.is_hide_set())
            .filter_map(|a| a.get_long().map(str::to_string))
            .chain(["help".to_string()])
            .collect();
        assert_eq!(
            listed, accepted,
            "`jitterlab {name} --help` against its arguments"
        );
        assert!(listed.len() > 15, "{name}: {listed:?}");
    }
}

/// Each option of each measuring command is parsed by that command: given alone (with the
/// arguments the command requires), clap takes it, or asks only for the option it requires
/// (`--samples-format` needs `--samples`).
#[test]
fn every_option_a_command_lists_is_parsed_by_it() {
    for name in MEASURING {
        let command = subcommand(name);
        let required: &[&str] = if name == "sweep" {
            &["--levels", "1"]
        } else {
            &[]
        };
        for arg in command.get_arguments().filter(|a| !a.is_hide_set()) {
            let Some(long) = arg.get_long().filter(|l| *l != "help") else {
                continue;
            };
            let mut argv = vec!["jitterlab".to_string(), name.to_string()];
            if required.first() != Some(&format!("--{long}").as_str()) {
                argv.extend(required.iter().map(|s| s.to_string()));
            }
            argv.push(format!("--{long}"));
            if takes_value(arg) {
                argv.push(sample_value(arg));
            }
            match jitterlab::cli::Cli::try_parse_from(&argv) {
                Ok(_) => {}
                Err(e) if e.kind() == clap::error::ErrorKind::MissingRequiredArgument => {}
                Err(e) => panic!("{argv:?}: {e}"),
            }
        }
    }
}

/// The help is sectioned as run's groups are, the same headings in every measuring command; the
/// IPC and priority-inversion sections are in `--help` only.
#[test]
fn the_help_is_sectioned_by_option_group() {
    let long = help("run", "--help");
    for heading in [
        "Length:",
        "CPUs and scheduling:",
        "Latency measurement:",
        "IPC wake methods",
        "Priority inversion (--wake pi-mutex):",
        "Loads:",
        "Output:",
        "Trace:",
        "Budget:",
    ] {
        assert!(
            long.lines().any(|l| l.starts_with(heading)),
            "run --help has no section {heading}\n{long}"
        );
    }
    let short = help("run", "-h");
    assert!(
        !short.contains("--sender-cpu") && !short.contains("--no-pi"),
        "{short}"
    );
    assert!(
        short.contains("--wake") && short.contains("--trace"),
        "{short}"
    );
    let noise = help("noise", "--help");
    assert!(noise.lines().any(|l| l == "Noise measurement:"), "{noise}");
    assert!(!noise.contains("Latency measurement:"), "{noise}");
}

/// `monitor` has none of the options of a run that ends: its help does not list them, and clap
/// refuses them as unexpected arguments (exit 2) instead of the monitor at run time.
#[test]
fn monitor_offers_no_option_of_a_run_that_ends() {
    let listed = listed_options(&help("monitor", "--help"));
    for option in NOT_MONITOR {
        assert!(!listed.contains(option), "monitor --help lists --{option}");
        let out = jitterlab(&["monitor", &format!("--{option}")]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "monitor --{option}: {}",
            text(&out)
        );
        assert!(
            text(&out).contains(&format!("unexpected argument '--{option}'")),
            "monitor --{option}: {}",
            text(&out)
        );
    }
    // The monitor's own options and the latency options are there.
    for option in [
        "listen",
        "window",
        "retain-size",
        "wake",
        "interval",
        "budget",
    ] {
        assert!(listed.contains(option), "monitor --help lacks --{option}");
    }
}

/// `noise` lists no option of a wakeup, and takes none.
#[test]
fn noise_offers_no_latency_option() {
    let listed = listed_options(&help("noise", "--help"));
    for option in LATENCY_ONLY {
        assert!(!listed.contains(option), "noise --help lists --{option}");
    }
    for option in [
        "threshold",
        "clock",
        "policy",
        "duration",
        "scenario",
        "trace",
    ] {
        assert!(listed.contains(option), "noise --help lacks --{option}");
    }
    let out = jitterlab(&["noise", "--interval", "1ms"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

/// `sweep` sweeps one --load: it has no scenario to offer.
#[test]
fn sweep_offers_no_scenario() {
    assert!(!listed_options(&help("sweep", "--help")).contains("scenario"));
    let out = jitterlab(&[
        "sweep",
        "--levels",
        "1",
        "--load",
        "cpu:workers={}",
        "--scenario",
        "s.toml",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("unexpected argument '--scenario'"),
        "{}",
        text(&out)
    );
}

/// `sweep --no-measure` with an option that only a measurement uses: clap's conflict, exit 2,
/// before anything is checked or started.
#[test]
fn sweep_without_measuring_refuses_the_measuring_options_by_clap() {
    for extra in [
        &["--loops", "10"][..],
        &["--trace"],
        &["--budget", "max<1ms"],
        &["--samples"],
    ] {
        let mut argv = vec![
            "sweep",
            "--no-measure",
            "--levels",
            "1",
            "--load",
            "cpu:workers={}",
        ];
        argv.extend_from_slice(extra);
        let out = jitterlab(&argv);
        assert_eq!(out.status.code(), Some(2), "{argv:?}: {}", text(&out));
        assert!(
            text(&out).contains("cannot be used with"),
            "{argv:?}: {}",
            text(&out)
        );
    }
}
