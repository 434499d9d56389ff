//! oslat's command line as rt-tests 2.x parses it (getopt_long, `commands::getopt`), in
//! oslat's terms and units: seconds for `-D` (or with an `m`, `h`, `d` suffix), a CPU list for
//! `-c`, a FIFO priority for `-f`. Unlike oslat, a value that is not a number is refused
//! instead of read as 0, and the options jitterlab cannot honour are refused by name, each with
//! why and what to use instead ([`REFUSED`]; docs/oslat.md lists the same).

use crate::commands::getopt::{self, Found, Spec, Takes, Tool, duration_seconds, spec};
use crate::error::{Failure, Result};
use std::path::PathBuf;

/// oslat's default number of buckets (its BUCKET_SIZE).
pub(crate) const DEFAULT_BUCKETS: usize = 32;
/// oslat's default run: 1 s (its `g.runtime = 1`).
pub(crate) const DEFAULT_DURATION_S: u64 = 1;

/// The options given, in oslat's terms and units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OslatOptions {
    /// `-b`: buckets of 1 us, the last one holding every longer gap too.
    pub buckets: usize,
    /// `-c`, as written; None: every online CPU (oslat's "all").
    pub cpu_list: Option<String>,
    /// `-C`: the CPU of the main thread (jitterlab's recorder and drain), default 0.
    pub main_cpu: usize,
    /// `-D`, s.
    pub duration_s: u64,
    /// `-f`: SCHED_FIFO at this priority; None: SCHED_OTHER (oslat's "default").
    pub rtprio: Option<i32>,
    pub json: Option<PathBuf>,
    pub quiet: bool,
    /// `-z`: leave out rows whose buckets are all zero (but the last).
    pub zero_omit: bool,
    /// `-s`: accepted; jitterlab has no pre-heat phase to run on one thread.
    pub(crate) single_preheat: bool,
    /// `--jitterlab-out DIR`: the result directory (jitterlab's own option).
    pub(crate) jitterlab_out: Option<PathBuf>,
    pub help: bool,
    /// `-v`: the version line, then exit 0.
    pub version: bool,
}

impl Default for OslatOptions {
    fn default() -> Self {
        OslatOptions {
            buckets: DEFAULT_BUCKETS,
            cpu_list: None,
            main_cpu: 0,
            duration_s: DEFAULT_DURATION_S,
            rtprio: None,
            json: None,
            quiet: false,
            zero_omit: false,
            single_preheat: false,
            jitterlab_out: None,
            help: false,
            version: false,
        }
    }
}

/// Every option accepted or refused by name (rt-tests 2.40's), and jitterlab's own.
static SPECS: &[Spec] = &[
    spec(Some('b'), "bucket-size", Takes::Value),
    spec(Some('B'), "bias", Takes::Nothing),
    spec(Some('c'), "cpu-list", Takes::Value),
    spec(Some('C'), "cpu-main-thread", Takes::Value),
    spec(Some('D'), "duration", Takes::Value),
    spec(None, "json", Takes::Value),
    spec(Some('f'), "rtprio", Takes::Value),
    spec(Some('h'), "help", Takes::Nothing),
    spec(Some('m'), "workload-mem", Takes::Value),
    spec(Some('q'), "quiet", Takes::Nothing),
    spec(Some('s'), "single-preheat", Takes::Nothing),
    spec(Some('T'), "trace-threshold", Takes::Value),
    spec(Some('v'), "version", Takes::Nothing),
    spec(Some('w'), "workload", Takes::Value),
    spec(Some('W'), "bucket-width", Takes::Value),
    spec(Some('z'), "zero-omit", Takes::Nothing),
    spec(None, "jitterlab-out", Takes::Value),
];

static TOOL: Tool = Tool {
    name: "oslat",
    origin: "rt-tests 2.40 oslat",
    specs: SPECS,
    example: "-D 60",
};

/// (long name, why jitterlab oslat refuses it and what to use instead). A refusal is exit 2
/// before anything runs: a script relying on one of these must not get figures measured some
/// other way.
pub(crate) const REFUSED: &[(&str, &str)] = &[
    (
        "bias",
        "the bias subtracts the minimum of oslat's 1 s pre-heat from every bucket; jitterlab has no pre-heat and reports every gap unshifted",
    ),
    (
        "trace-threshold",
        "jitterlab writes no ftrace marker and does not stop ftrace; `jitterlab noise --trace` explains every gap over --explain-above, and `--budget 'max<...'` fails the run on one",
    ),
    (
        "bucket-width",
        "rt-tests 2.40's oslat has no -W (it came later); jitterlab oslat prints 2.40's 1 us buckets, and `jitterlab noise` keeps every gap in ns",
    ),
];

/// Parses oslat's options (the words after `oslat`).
pub fn parse(args: &[String]) -> Result<OslatOptions> {
    let mut o = OslatOptions::default();
    for found in getopt::split(&TOOL, args)? {
        apply(&mut o, &found)?;
    }
    Ok(o)
}

fn usage(found: &Found, what: &str) -> Failure {
    Failure::usage(format!(
        "oslat: {} '{}': {what}",
        found.written,
        found.value.as_deref().unwrap_or("")
    ))
}

fn apply(o: &mut OslatOptions, found: &Found) -> Result<()> {
    if let Some((_, reason)) = REFUSED.iter().find(|(name, _)| *name == found.spec.long) {
        return Err(Failure::usage(format!(
            "oslat: {} is not supported by jitterlab oslat: {reason}",
            found.written
        )));
    }
    let value = found.value.as_deref().unwrap_or("");
    match found.spec.long {
        "bucket-size" => {
            let n: usize = getopt::number(&TOOL, found, "a number of buckets")?;
            // oslat refuses 4 too ("<= 4"), whatever its help says.
            if !(5..=1024).contains(&n) {
                return Err(usage(found, "expected 5 to 1024 buckets"));
            }
            o.buckets = n;
        }
        "cpu-list" => o.cpu_list = Some(value.to_string()),
        "cpu-main-thread" => o.main_cpu = getopt::number(&TOOL, found, "a CPU number")?,
        "duration" => {
            o.duration_s = duration_seconds(value).filter(|&s| s > 0).ok_or_else(|| {
                usage(
                    found,
                    "expected seconds above 0, or a number with m, h or d (e.g. 60, 20m, 2H)",
                )
            })?
        }
        "json" => o.json = Some(PathBuf::from(value)),
        "rtprio" => {
            let p: i32 = getopt::number(&TOOL, found, "a SCHED_FIFO priority 1 to 99")?;
            if !(1..=99).contains(&p) {
                return Err(usage(found, "expected a SCHED_FIFO priority 1 to 99"));
            }
            o.rtprio = Some(p);
        }
        "help" => o.help = true,
        "workload-mem" => {
            // Only a workload uses it, and jitterlab oslat runs none ("no"): checked, unused.
            memory_size(value).ok_or_else(|| usage(found, "expected a size such as 4K or 1M"))?;
        }
        "workload" => {
            if value != "no" {
                return Err(usage(
                    found,
                    "jitterlab oslat runs the loop without a workload (-w no); its loop reads the clock and nothing else, so a memmove between reads cannot be measured. Use `jitterlab noise --load memory:...` to load the CPUs beside it",
                ));
            }
        }
        "quiet" => o.quiet = true,
        "single-preheat" => o.single_preheat = true,
        "version" => o.version = true,
        "zero-omit" => o.zero_omit = true,
        "jitterlab-out" => o.jitterlab_out = Some(PathBuf::from(value)),
        other => unreachable!("option --{other} has a spec but no meaning"),
    }
    Ok(())
}

/// rt-tests' parse_mem_string: bytes, or a number with K, M or G (either case).
fn memory_size(text: &str) -> Option<u64> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let scale: u64 = match suffix {
        "" | "b" | "B" => 1,
        "k" | "K" => 1 << 10,
        "m" | "M" => 1 << 20,
        "g" | "G" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(line: &str) -> OslatOptions {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        parse(&args).unwrap()
    }

    fn refused(line: &str) -> String {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        let e = parse(&args).unwrap_err();
        assert_eq!(e.code, crate::error::ExitCode::Usage, "{}", e.message);
        e.message
    }

    #[test]
    fn oslats_spellings_and_defaults() {
        let o = parsed("");
        assert_eq!((o.buckets, o.duration_s, o.main_cpu), (32, 1, 0));
        assert_eq!((o.rtprio, o.cpu_list), (None, None));
        let o = parsed("-D 3 -c 0,1 -f 1 --json=x.json -qz -b8 -C 1 -w no -m 4K -s");
        assert_eq!(o.duration_s, 3);
        assert_eq!(o.cpu_list.as_deref(), Some("0,1"));
        assert_eq!(o.rtprio, Some(1));
        assert_eq!(o.json, Some(PathBuf::from("x.json")));
        assert!(o.quiet && o.zero_omit && o.single_preheat);
        assert_eq!((o.buckets, o.main_cpu), (8, 1));
        assert_eq!(parsed("--duration=20m").duration_s, 1200);
        assert_eq!(parsed("-D 2H").duration_s, 7200);
        assert!(parsed("-v").version);
        assert!(parsed("-h").help);
    }

    #[test]
    fn bad_values_and_refused_options_say_why() {
        assert!(refused("-b 4").contains("5 to 1024"));
        assert!(refused("-b 2000").contains("5 to 1024"));
        assert!(refused("-f 0").contains("1 to 99"));
        assert!(refused("-f high").contains("-f 'high'"));
        assert!(refused("-D 0").contains("above 0"));
        assert!(refused("-D 1ms").contains("-D '1ms'"));
        assert!(refused("-w memmove").contains("without a workload"));
        assert!(refused("-m lots").contains("4K"));
        assert!(refused("-B").contains("pre-heat"));
        assert!(refused("-T 100").contains("ftrace"));
        assert!(refused("-W 500").contains("2.40"));
        assert!(refused("-x").contains("unknown option '-x'"));
    }

    #[test]
    fn memory_sizes_as_rt_tests_reads_them() {
        assert_eq!(memory_size("4K"), Some(4096));
        assert_eq!(memory_size("1m"), Some(1 << 20));
        assert_eq!(memory_size("100"), Some(100));
        assert_eq!(memory_size("1T"), None);
    }
}
