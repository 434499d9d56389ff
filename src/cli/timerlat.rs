//! `jitterlab timerlat`'s clap side: every word after the subcommand is rtla timerlat's, parsed
//! by `commands::timerlat::options` as rtla's getopt would.

use clap::Args;

#[derive(Debug, Args, Clone)]
#[command(disable_help_flag = true)]
pub struct TimerlatArgs {
    /// `rtla timerlat hist`'s options, e.g. hist -c 1-3 -d 60 -P f:95 --jitterlab-trace;
    /// `jitterlab timerlat --help` lists them, docs/timerlat.md says which are refused.
    #[arg(
        value_name = "RTLA TIMERLAT OPTIONS",
        num_args = 0..,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub args: Vec<String>,
}
