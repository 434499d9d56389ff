//! cyclictest's command line as rt-tests 2.x parses it (getopt_long): short options clustered
//! (`-qm`) or with attached values (`-i1000`), long options with `=VALUE` or a separate value,
//! and the options whose value is optional (`-a`, `-t`), which take the next word only when it
//! looks like their value (a number, or for `-a` a CPU list), as cyclictest decides. Values are
//! cyclictest's units: microseconds, seconds for `-D` (or with an `m`, `h`, `d` suffix).
//!
//! Unlike cyclictest, an unknown or refused option is exit 2 with a message naming it (rt-tests
//! prints its help and exits 0, which lets a script "succeed" having measured nothing), and a
//! value that is not a number is refused instead of read as 0.

use crate::commands::getopt::{
    self, Found, Spec, Takes, Tool, duration_seconds, number_like, spec,
};
use crate::error::{Failure, Result};
use std::path::PathBuf;

/// Where the threads run (`-a`): cyclictest's affinity modes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Affinity {
    /// No `-a`: thread i on the i-th CPU (rt-tests 2.x pins threads this way too).
    #[default]
    Unspecified,
    /// `-a` without a list: every CPU.
    All,
    /// `-a LIST`: thread i on the (i mod n)-th CPU of the list.
    List(String),
}

/// How many threads (`-t`, `-S`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Threads {
    /// No `-t`: one thread.
    #[default]
    One,
    /// `-t` without a number, or `-S`: one per CPU of the affinity.
    PerCpu,
    /// `-t N`.
    Count(usize),
}

/// The wake method cyclictest's timer options choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Timer {
    /// clock_nanosleep to an absolute time (cyclictest's default; `-n` of rt-tests 1.x).
    #[default]
    Absolute,
    /// `-r`: clock_nanosleep for a relative time.
    Relative,
    /// `-s`: nanosleep.
    System,
    /// `-x`: a POSIX timer.
    PosixTimer,
}

/// The options given, in cyclictest's terms and units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CyclictestOptions {
    pub(crate) affinity: Affinity,
    pub threads: Threads,
    /// `-S`: every CPU, `-a` and `-t` ignored (with cyclictest's warnings).
    pub(crate) smp: bool,
    /// `-i`, us.
    pub interval_us: u64,
    /// `-d`, us; None: cyclictest's default (500 us, or 0 with `-h`).
    pub(crate) distance_us: Option<u64>,
    /// `-D`, s; 0 or None: no limit.
    pub duration_s: Option<u64>,
    /// `-l`; 0: no limit.
    pub loops: u64,
    /// `-b`: stop when a latency exceeds this (us, or ns with `-N`).
    pub(crate) break_value: Option<u64>,
    /// `-h`/`-H`, us; 0: no histogram.
    pub(crate) histogram_us: u64,
    /// `-H`: a column and summary values of all threads.
    pub(crate) histofall: bool,
    pub(crate) histfile: Option<PathBuf>,
    /// `-p`/`--priority`.
    pub priority: Option<i32>,
    /// `--policy`, as written.
    pub policy: Option<String>,
    pub quiet: bool,
    /// `-N`: figures in ns.
    pub(crate) nsecs: bool,
    pub json: Option<PathBuf>,
    /// `--mainaffinity`: the CPU list of the main (drain) thread.
    pub(crate) main_affinity: Option<String>,
    /// `--laptop` or `--default-system`: PM QoS left alone.
    pub(crate) no_pm_qos: bool,
    /// `--latency`, us.
    pub(crate) pm_qos_us: Option<u32>,
    /// `-c`: 0 CLOCK_MONOTONIC, 1 CLOCK_REALTIME.
    pub clock: u32,
    pub(crate) timer: Timer,
    /// `--jitterlab-out DIR`: the result directory (jitterlab's own option).
    pub(crate) jitterlab_out: Option<PathBuf>,
    /// `-m`: lock memory (mlockall), as rt-tests' cyclictest does only when asked (N22: a
    /// user's 8 MiB RLIMIT_MEMLOCK refused the lock jitterlab always took).
    pub(crate) mlockall: bool,
    /// `--help`.
    pub help: bool,
    /// Warnings cyclictest itself would print (e.g. `-a ignored due to smp mode`).
    pub warnings: Vec<String>,
}

impl Default for CyclictestOptions {
    fn default() -> Self {
        CyclictestOptions {
            affinity: Affinity::default(),
            threads: Threads::default(),
            smp: false,
            interval_us: 1000,
            distance_us: None,
            duration_s: None,
            loops: 0,
            break_value: None,
            histogram_us: 0,
            histofall: false,
            histfile: None,
            priority: None,
            policy: None,
            quiet: false,
            nsecs: false,
            json: None,
            main_affinity: None,
            no_pm_qos: false,
            pm_qos_us: None,
            clock: 0,
            timer: Timer::default(),
            jitterlab_out: None,
            mlockall: false,
            help: false,
            warnings: Vec::new(),
        }
    }
}

/// cyclictest's histogram limit (HIST_MAX): a larger `-h` is lowered to it, as cyclictest does.
pub(crate) const HIST_MAX: u64 = 1_000_000;

/// cyclictest takes the next word as `-a`'s list when it starts with a digit, `!`, `+` or `a`
/// (rt-tests 2.4 `process_options`: libnuma's `all` and relative `+N` lists). LAVA's
/// cyclictest job runs `-t $(nproc) -a all` for its "every CPU" setting.
fn cpu_list_like(s: &str) -> bool {
    number_like(s) || s.starts_with(['!', '+', 'a'])
}

/// Every option accepted or refused by name; anything else is unknown.
static SPECS: &[Spec] = &[
    spec(Some('a'), "affinity", Takes::Optional(cpu_list_like)),
    spec(Some('A'), "aligned", Takes::Optional(number_like)),
    spec(Some('b'), "breaktrace", Takes::Value),
    spec(Some('c'), "clock", Takes::Value),
    spec(Some('C'), "context", Takes::Nothing),
    spec(Some('d'), "distance", Takes::Value),
    spec(Some('D'), "duration", Takes::Value),
    spec(None, "latency", Takes::Value),
    spec(Some('F'), "fifo", Takes::Value),
    spec(Some('h'), "histogram", Takes::Value),
    spec(Some('H'), "histofall", Takes::Value),
    spec(None, "histfile", Takes::Value),
    spec(Some('i'), "interval", Takes::Value),
    spec(None, "json", Takes::Value),
    spec(None, "laptop", Takes::Nothing),
    spec(Some('l'), "loops", Takes::Value),
    spec(None, "mainaffinity", Takes::Value),
    spec(Some('m'), "mlockall", Takes::Nothing),
    spec(Some('M'), "refresh_on_max", Takes::Nothing),
    spec(Some('n'), "nanosleep", Takes::Nothing),
    spec(Some('N'), "nsecs", Takes::Nothing),
    spec(Some('o'), "oscope", Takes::Value),
    spec(Some('p'), "priority", Takes::Value),
    spec(None, "policy", Takes::Value),
    spec(None, "priospread", Takes::Nothing),
    spec(Some('q'), "quiet", Takes::Nothing),
    spec(Some('r'), "relative", Takes::Nothing),
    spec(Some('R'), "resolution", Takes::Nothing),
    spec(None, "secaligned", Takes::Optional(number_like)),
    spec(Some('s'), "system", Takes::Nothing),
    spec(None, "smi", Takes::Nothing),
    spec(Some('S'), "smp", Takes::Nothing),
    spec(None, "spike", Takes::Value),
    spec(None, "spike-nodes", Takes::Value),
    spec(Some('t'), "threads", Takes::Optional(number_like)),
    spec(None, "tracemark", Takes::Nothing),
    spec(Some('u'), "unbuffered", Takes::Nothing),
    spec(Some('v'), "verbose", Takes::Nothing),
    spec(None, "dbg_cyclictest", Takes::Nothing),
    spec(None, "default-system", Takes::Nothing),
    spec(Some('x'), "posix_timers", Takes::Nothing),
    spec(None, "help", Takes::Nothing),
    spec(None, "jitterlab-out", Takes::Value),
];

/// cyclictest's command line.
static TOOL: Tool = Tool {
    name: "cyclictest",
    origin: "rt-tests 2.x cyclictest",
    specs: SPECS,
    example: "-i 1000",
};

/// Parses cyclictest's options (the words after `cyclictest`).
pub fn parse(args: &[String]) -> Result<CyclictestOptions> {
    let mut options = CyclictestOptions::default();
    for found in getopt::split(&TOOL, args)? {
        apply(&mut options, &found)?;
    }
    finish(&mut options);
    Ok(options)
}

/// A whole number of cyclictest's units.
fn number<T: std::str::FromStr>(found: &Found, what: &str) -> Result<T> {
    getopt::number(&TOOL, found, what)
}

/// Sets what `found` means, or refuses it with the reason.
fn apply(o: &mut CyclictestOptions, found: &Found) -> Result<()> {
    if let Some(reason) = super::refused::reason(found.spec.long) {
        return Err(Failure::usage(format!(
            "cyclictest: {} is not supported by jitterlab cyclictest: {reason}",
            found.written
        )));
    }
    match found.spec.long {
        "affinity" => {
            o.affinity = match &found.value {
                // libnuma's word for every CPU.
                Some(list) if list == "all" => Affinity::All,
                Some(list) => Affinity::List(list.clone()),
                None => Affinity::All,
            }
        }
        "threads" => {
            o.threads = match &found.value {
                // rt-tests 2.x takes the next word as the count only when atoi() of it is not
                // 0, so `-t 0` (LAVA's "every CPU") is `-t` alone: one thread per CPU. An
                // attached 0 (`-t0`, `--threads=0`) is its error (no threads).
                Some(_) => match number(found, "a number of threads")? {
                    0 if !found.attached => Threads::PerCpu,
                    0 => {
                        let glue = if found.written.starts_with("--") {
                            "="
                        } else {
                            ""
                        };
                        return Err(Failure::usage(format!(
                            "cyclictest: {}{glue}0: at least one thread is needed; -t 0 (a separate word) or -t alone is one thread per CPU",
                            found.written
                        )));
                    }
                    n => Threads::Count(n),
                },
                None => Threads::PerCpu,
            }
        }
        "smp" => o.smp = true,
        "interval" => o.interval_us = number(found, "an interval in microseconds")?,
        "distance" => o.distance_us = Some(number(found, "a distance in microseconds")?),
        "duration" => {
            let text = found.value.as_deref().unwrap_or("");
            o.duration_s = Some(duration_seconds(text).ok_or_else(|| {
                Failure::usage(format!(
                    "cyclictest: {} '{text}': expected seconds, or a number with m, h or d (e.g. 60, 10m, 2h)",
                    found.written
                ))
            })?);
        }
        "loops" => o.loops = number(found, "a number of loops")?,
        "breaktrace" => o.break_value = Some(number(found, "a latency in microseconds")?),
        "histogram" | "histofall" => {
            o.histogram_us = number(found, "the histogram's size in microseconds")?;
            o.histofall |= found.spec.long == "histofall";
        }
        "histfile" => o.histfile = found.value.clone().map(PathBuf::from),
        "priority" => o.priority = Some(number(found, "a priority 0 to 99")?),
        "policy" => o.policy = found.value.clone(),
        "quiet" => o.quiet = true,
        "nsecs" => o.nsecs = true,
        "json" => o.json = found.value.clone().map(PathBuf::from),
        "mainaffinity" => o.main_affinity = found.value.clone(),
        "laptop" | "default-system" => o.no_pm_qos = true,
        "latency" => o.pm_qos_us = Some(number(found, "a latency in microseconds")?),
        "clock" => o.clock = number(found, "0 (CLOCK_MONOTONIC) or 1 (CLOCK_REALTIME)")?,
        "relative" => o.timer = Timer::Relative,
        "system" => o.timer = Timer::System,
        "posix_timers" => o.timer = Timer::PosixTimer,
        "jitterlab-out" => o.jitterlab_out = found.value.clone().map(PathBuf::from),
        "help" => o.help = true,
        "mlockall" => o.mlockall = true,
        // What jitterlab always does, or what changes only the live display: accepted.
        "nanosleep" | "unbuffered" | "refresh_on_max" => {}
        other => unreachable!("option --{other} has a spec but no meaning"),
    }
    Ok(())
}

/// cyclictest's adjustments after parsing, with the warnings it prints for them.
fn finish(o: &mut CyclictestOptions) {
    if o.smp {
        if o.affinity != Affinity::Unspecified {
            o.warnings.push("-a ignored due to smp mode".into());
        }
        if o.threads != Threads::One {
            o.warnings.push("-t ignored due to smp mode".into());
        }
        o.affinity = Affinity::All;
        o.threads = Threads::PerCpu;
    }
    if o.histogram_us > HIST_MAX {
        o.histogram_us = HIST_MAX;
    }
    if o.histogram_us > 0 && o.distance_us.is_some() {
        o.warnings
            .push("distance is ignored and set to 0, if histogram enabled".into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(line: &str) -> CyclictestOptions {
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
    fn getopt_spellings() {
        let o = parsed("-qm -i200 -D 10m -h 400 --priority=80 -t 2 -a 0-1 --json=/tmp/x.json");
        assert!(o.quiet);
        assert_eq!(o.interval_us, 200);
        assert_eq!(o.duration_s, Some(600));
        assert_eq!(o.histogram_us, 400);
        assert_eq!(o.priority, Some(80));
        assert_eq!(o.threads, Threads::Count(2));
        assert_eq!(o.affinity, Affinity::List("0-1".into()));
        assert_eq!(o.json, Some(PathBuf::from("/tmp/x.json")));
        // Optional values: the next word only when it looks like one.
        let o = parsed("-t -a -q");
        assert_eq!(o.threads, Threads::PerCpu);
        assert_eq!(o.affinity, Affinity::All);
        assert!(o.quiet);
        // `-a all` (LAVA's cyclictest.sh with -t 0), in both spellings, is every CPU.
        for line in ["-t 2 -a all -q", "-t 2 --affinity=all"] {
            let o = parsed(line);
            assert_eq!(
                (&o.affinity, o.threads),
                (&Affinity::All, Threads::Count(2))
            );
        }
        // `-t 0` is one thread per CPU, as rt-tests 2.x reads it (issue 39 R11); an attached
        // 0 is refused, as rt-tests refuses it.
        for line in ["-t 0", "-t 0 -q", "-q -t 00", "--threads 0"] {
            assert_eq!(parsed(line).threads, Threads::PerCpu, "{line}");
        }
        assert!(refused("-t0").contains("at least one thread"));
        assert!(refused("--threads=0").contains("-t 0 (a separate word)"));
        assert_eq!(parsed("-t 3").threads, Threads::Count(3));
        let o = parsed("-S -p95 -H 50 -l 100");
        assert_eq!((o.affinity, o.threads), (Affinity::All, Threads::PerCpu));
        assert!(o.histofall);
        assert_eq!((o.histogram_us, o.loops), (50, 100));
    }

    #[test]
    fn smp_overrides_with_cyclictests_warnings() {
        let o = parsed("-S -t 3 -a 1");
        assert_eq!(o.threads, Threads::PerCpu);
        assert_eq!(o.warnings.len(), 2, "{:?}", o.warnings);
        let o = parsed("-h 10 -d 100");
        assert!(o.warnings[0].contains("distance is ignored"));
        assert_eq!(parsed("-h 2000000").histogram_us, HIST_MAX);
    }

    #[test]
    fn bad_and_unknown_options_are_usage_errors() {
        assert!(refused("-i fast").contains("-i 'fast'"));
        assert!(refused("-Z").contains("unknown option '-Z'"));
        assert!(refused("--histogram").contains("needs a value"));
        assert!(refused("--quiet=1").contains("takes no value"));
        assert!(refused("1000").contains("not an option"));
        assert!(refused("--smi").contains("SMI"));
        assert!(refused("--tracemark").contains("trace_marker"));
        assert_eq!(parsed("-b 100").break_value, Some(100));
    }
}
