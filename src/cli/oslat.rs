//! `jitterlab oslat`'s clap side: every word after the subcommand is oslat's, parsed by
//! `commands::oslat::options` as rt-tests' getopt would (oslat's `-h` is its help, `-v` its
//! version, and its values follow getopt's rules, not clap's).

use clap::Args;

#[derive(Debug, Args, Clone)]
#[command(disable_help_flag = true, disable_version_flag = true)]
pub struct OslatArgs {
    /// oslat's options (rt-tests 2.40), e.g. -D 60 -c 1-3 -f 1 -q --json=FILE;
    /// `jitterlab oslat --help` lists them, docs/oslat.md says which are refused.
    #[arg(
        value_name = "OSLAT OPTIONS",
        num_args = 0..,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub args: Vec<String>,
}
