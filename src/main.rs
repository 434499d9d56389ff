//! The jitterlab binary: parse, dispatch, turn errors into exit codes (DESIGN.md).

use clap::Parser;
use jitterlab::cli::{Cli, Command};
use jitterlab::error::{Failure, escape_controls};
use jitterlab::{report, runner, system};

fn main() {
    let cli = parse_command_line();
    let code = match dispatch(cli.command) {
        Ok(code) => code,
        Err(Failure { code, message }) => {
            // Messages quote input (file contents, names, option values): escaped here, once.
            eprintln!("jitterlab: {}", escape_controls(&message));
            code as i32
        }
    };
    std::process::exit(code);
}

/// clap's parse, with its errors safe for a terminal: clap quotes the offending argument as
/// given, so when an argument holds control characters the error reported is that of the same
/// command line with them escaped (it quotes the escaped text; clap's colours stay).
fn parse_command_line() -> Cli {
    Cli::try_parse().unwrap_or_else(|e| {
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        let escaped: Vec<String> = args
            .iter()
            .map(|a| escape_controls(&a.to_string_lossy()).into_owned())
            .collect();
        let has_controls = args
            .iter()
            .zip(&escaped)
            .any(|(a, b)| a.to_str() != Some(b));
        if e.use_stderr()
            && has_controls
            && let Err(escaped_error) = Cli::try_parse_from(&escaped)
        {
            escaped_error.exit()
        }
        e.exit()
    })
}

fn dispatch(command: Command) -> jitterlab::error::Result<i32> {
    match command {
        Command::Run(args) => {
            let outcome = runner::run(&args, std::env::args().collect())?;
            if args.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&outcome.record).expect("run records serialise")
                );
            } else {
                print!(
                    "{}",
                    report::terminal::summary(&outcome.record, &outcome.dir.path)
                );
            }
            Ok(match outcome.record.ended {
                jitterlab::results::run_record::Ended::Failed => {
                    jitterlab::error::ExitCode::Run as i32
                }
                _ if outcome.record.budget.as_ref().is_some_and(|b| !b.passed) => {
                    jitterlab::error::ExitCode::CheckFailed as i32
                }
                _ => 0,
            })
        }
        Command::Export(args) => {
            report::export::export(&args.run_dir, args.format, args.output.as_deref()).map(|_| 0)
        }
        Command::Doctor(args) => system::doctor::run(args.json, args.cpus.as_deref()),
        Command::Compare(args) => report::compare_view::command(&args),
        Command::Import(args) => jitterlab::results::import::command(&args).map(|_| 0),
        Command::Load(args) => jitterlab::load::command::run(&args),
        Command::Sweep(args) => jitterlab::load::sweep::run(&args, std::env::args().collect()),
        Command::LoadWorker(args) => Ok(jitterlab::load::worker::main(
            &args.spec,
            &args.cpus,
            &args.report_cpus,
            args.once,
        )),
        Command::LoadReaper(args) => Ok(jitterlab::load::contain::reaper_main(
            args.owner,
            args.cgroup.as_deref(),
        )),
        Command::Report(args) => report::html::run(&args),
    }
}
