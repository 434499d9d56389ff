//! The subcommands, one file each: each turns its command-line arguments (`cli`) into the plain
//! inputs of the modules that do the work, calls them, prints what the command prints and
//! returns the exit code. Only this layer and `main.rs` know `cli`. A new subcommand is a file
//! here, its entry in `cli::Command`, and its row in [`dispatch`].

pub mod compare;
pub mod cyclictest;
pub mod doctor;
mod dropin;
pub mod export;
mod getopt;
pub mod import;
pub mod load;
pub mod monitor;
pub mod noise;
pub mod oslat;
pub mod report;
pub mod rt_json;
pub mod run;
pub mod sweep;
pub mod timerlat;
pub mod tune;

use crate::cli::Command;
use crate::error::Result;

/// Runs `command`; returns the exit code.
pub fn dispatch(command: Command) -> Result<i32> {
    // The commands that change the system catch SIGINT/SIGTERM before anything else, in the
    // one place they are installed: a signal during their setup then stops them cleanly
    // instead of killing them half set up, or being lost (session/signals.rs).
    // They also undo, before changing anything, what killed jitterlabs left (the kernel state
    // their journals name): whatever command comes next after a SIGKILL cleans it up
    // (session/stale.rs; tests/offline/kernel_state.rs checks it is called here).
    if changes_the_system(&command) {
        crate::session::signals::install()?;
        crate::session::stale::undo_at_start();
    }
    let result = match command {
        Command::Run(args) => run::run(&args),
        Command::Export(args) => export::run(&args),
        Command::Doctor(args) => doctor::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::Import(args) => import::run(&args),
        Command::Load(args) => load::run(&args),
        Command::Sweep(args) => sweep::run(&args),
        Command::Tune(args) => tune::run(&args),
        Command::Report(args) => report::run(&args),
        Command::Monitor(args) => monitor::run(&args),
        Command::Noise(args) => noise::run(&args),
        Command::Cyclictest(args) => cyclictest::run(&args.args),
        Command::Oslat(args) => oslat::run(&args.args),
        Command::Timerlat(args) => timerlat::run(&args.args),
        // The hidden entry points of jitterlab's own child processes: nothing to translate.
        Command::LoadWorker(args) => Ok(crate::load::worker::main(
            &args.spec,
            &args.cpus,
            &args.report_cpus,
            args.once,
        )),
        Command::LoadReaper(args) => Ok(crate::load::contain::reaper_main(
            args.owner,
            args.cgroup.as_deref(),
            args.cpuset.as_deref(),
        )),
    };
    // A second SIGINT/SIGTERM that came while the user's programs were being ended was held
    // back until their outcomes were recorded (session/signals.rs `ExitHold`): it is the
    // exit it asked for.
    // A stop request that no session took up (a dry run, a command refused before its
    // session): the handler only set a flag, so the command would end as if none had come.
    // It ends as interrupted instead, as the shell ends a program that SIGINT killed (130),
    // saying so (eleventh hostile re-run, L11-b).
    // (Only a command that installed the handlers can have one: for the others a SIGINT or
    // SIGTERM ends the process.)
    if let Some(signal) = crate::session::signals::unanswered_request() {
        if let Err(f) = &result {
            eprintln!("jitterlab: {}", crate::error::escape_controls(&f.message));
        }
        eprintln!(
            "jitterlab: interrupted by {signal} before a run started: nothing was started; exiting {}",
            crate::error::STOPPED_AT_ONCE
        );
        return Ok(crate::error::STOPPED_AT_ONCE);
    }
    if crate::session::signals::exit_was_deferred() {
        if let Err(f) = &result {
            eprintln!("jitterlab: {}", crate::error::escape_controls(&f.message));
        }
        eprintln!(
            "jitterlab: a second SIGINT/SIGTERM: exiting (130) after recording the outcomes of the programs it ended"
        );
        return Ok(crate::error::STOPPED_AT_ONCE);
    }
    result
}

/// Whether `command` changes the system (a result directory, CPU locks, tracing, loads, PM
/// QoS...) and so takes SIGINT/SIGTERM as a clean stop. Every subcommand is named, without a
/// catch-all: a new one must be decided here (tests/offline/signals_setup.rs checks it).
fn changes_the_system(command: &Command) -> bool {
    match command {
        Command::Run(_)
        | Command::Sweep(_)
        | Command::Tune(_)
        | Command::Monitor(_)
        | Command::Noise(_)
        | Command::Load(_)
        | Command::Cyclictest(_)
        | Command::Oslat(_)
        | Command::Timerlat(_) => true,
        // Readers of result files and of the system: the default action of SIGINT/SIGTERM
        // (ending the process) leaves nothing behind that they made.
        Command::Export(_)
        | Command::Doctor(_)
        | Command::Compare(_)
        | Command::Import(_)
        | Command::Report(_) => false,
        // jitterlab's own child processes: the load worker has its own SIGTERM handler
        // (load/worker.rs), and the reaper must outlive the signals that end jitterlab.
        Command::LoadWorker(_) | Command::LoadReaper(_) => false,
    }
}
