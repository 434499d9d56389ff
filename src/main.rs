//! The jitterlab binary: parse, dispatch, turn errors into exit codes (docs/architecture.md, "Exit codes").

use clap::Parser;
use jitterlab::cli::Cli;
use jitterlab::commands;
use jitterlab::error::{ExitCode, Failure, escape_controls};

fn main() {
    // The start-up timeline's first step: exec to here (run.json `startup`, ci/startup.sh).
    jitterlab::session::startup::mark("main entered");
    // Called through a link named `cyclictest` or `oslat`: the arguments are that tool's.
    let command = match invoked_as() {
        Some(("cyclictest", args)) => {
            jitterlab::cli::Command::Cyclictest(jitterlab::cli::CyclictestArgs { args })
        }
        Some((_, args)) => jitterlab::cli::Command::Oslat(jitterlab::cli::OslatArgs { args }),
        None => parse_command_line().command,
    };
    jitterlab::session::startup::mark("command line parsed");
    let code = match commands::dispatch(command) {
        Ok(code) => code,
        Err(Failure { code, message }) => {
            // Messages quote input (file contents, names, option values): escaped here, once.
            jitterlab::stderr::write(&format!("jitterlab: {}\n", escape_controls(&message)));
            code.status()
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
        // A cyclictest habit (`run -h 400`, `-m`, `-t`) gets its hint, never help and exit 0.
        let words: Vec<String> = args
            .iter()
            .skip(1)
            .map(|a| a.to_string_lossy().into())
            .collect();
        if let Some(hint) = jitterlab::cli::habits::hint(&words) {
            jitterlab::stderr::write(&format!("jitterlab {}\n", escape_controls(&hint)));
            std::process::exit(ExitCode::Usage.status());
        }
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

/// The drop-in the program was called as (through a link named `cyclictest` or `oslat`) and
/// the arguments after its name.
fn invoked_as() -> Option<(&'static str, Vec<String>)> {
    let mut args = std::env::args_os();
    let name = std::path::PathBuf::from(args.next()?);
    let tool = ["cyclictest", "oslat"]
        .into_iter()
        .find(|t| name.file_name().is_some_and(|n| n == *t))?;
    Some((
        tool,
        args.map(|a| a.to_string_lossy().into_owned()).collect(),
    ))
}
