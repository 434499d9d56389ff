//! `jitterlab cyclictest`'s clap side: every word after the subcommand is cyclictest's, parsed by
//! `commands::cyclictest::options` as rt-tests' getopt would (clap's `-h` would be help, and
//! cyclictest's optional values, `-t [NUM]`, follow getopt's rules, not clap's).

use clap::Args;

#[derive(Debug, Args, Clone)]
#[command(disable_help_flag = true)]
pub struct CyclictestArgs {
    /// cyclictest's options (rt-tests 2.x), e.g. -q -D 60 -i 1000 -t -p 95 -h 400 --json=FILE;
    /// `jitterlab cyclictest --help` lists them, docs/cyclictest.md says which are refused.
    #[arg(
        value_name = "CYCLICTEST OPTIONS",
        num_args = 0..,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub args: Vec<String>,
}
