//! The command lines of the drop-ins (`jitterlab cyclictest`, `jitterlab oslat`) cut as
//! rt-tests' getopt_long cuts them: short options clustered (`-qz`) or with attached values
//! (`-D60`), long options with `=VALUE` or a separate value, and options whose value is
//! optional, which take the next word only when it looks like their value. Each drop-in has
//! its table of options ([`Spec`]); what an option means is the drop-in's.
//!
//! Unlike rt-tests, an unknown option is exit 2 with a message naming it (rt-tests prints its
//! help, and cyclictest then exits 0, which lets a script "succeed" having measured nothing).

use crate::error::{Failure, Result};

/// How an option takes its value.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Takes {
    Nothing,
    Value,
    /// Attached, or the next word when the function accepts it.
    Optional(fn(&str) -> bool),
}

/// One option: short letter (if any), long name, how it takes a value.
pub(crate) struct Spec {
    pub short: Option<char>,
    pub long: &'static str,
    pub(crate) takes: Takes,
}

pub(super) const fn spec(short: Option<char>, long: &'static str, takes: Takes) -> Spec {
    Spec { short, long, takes }
}

/// A drop-in's command line: its name (messages start with it) and its options.
pub(crate) struct Tool {
    pub name: &'static str,
    /// Whose command line it is, for messages: "rt-tests 2.x cyclictest".
    pub(crate) origin: &'static str,
    pub specs: &'static [Spec],
    /// An option with its value, for the message about a word that is not an option.
    pub(crate) example: &'static str,
}

/// One option as found on the command line: its spec and its value.
pub(crate) struct Found {
    pub spec: &'static Spec,
    /// How the user wrote it (`-D`, `--duration`), for messages.
    pub written: String,
    pub value: Option<String>,
    /// Whether the value was attached (`-t0`, `--threads=0`) rather than the next word
    /// (`-t 0`): cyclictest reads the two differently for an optional value.
    pub(crate) attached: bool,
}

/// A word that starts with a digit: the value of an option whose value is optional.
pub(crate) fn number_like(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_digit())
}

/// The command line cut into options with their values, as getopt_long would.
pub(super) fn split(tool: &Tool, args: &[String]) -> Result<Vec<Found>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if let Some(long) = arg.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let spec = tool
                .specs
                .iter()
                .find(|s| s.long == name)
                .ok_or_else(|| unknown(tool, arg))?;
            let written = format!("--{name}");
            let was_attached = attached.is_some();
            let value = take_value(tool, spec, attached, args, &mut i, &written)?;
            out.push(Found {
                spec,
                written,
                value,
                attached: was_attached,
            });
        } else if let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) {
            split_cluster(tool, cluster, args, &mut i, &mut out)?;
        } else {
            return Err(Failure::usage(format!(
                "{0}: '{arg}' is not an option; {0} takes no operands (values follow their option, e.g. {1})",
                tool.name, tool.example
            )));
        }
    }
    Ok(out)
}

/// `-qzD60`: flags, then at most one option with a value, which takes the rest.
fn split_cluster(
    tool: &Tool,
    cluster: &str,
    args: &[String],
    i: &mut usize,
    out: &mut Vec<Found>,
) -> Result<()> {
    for (at, c) in cluster.char_indices() {
        let spec = tool
            .specs
            .iter()
            .find(|s| s.short == Some(c))
            .ok_or_else(|| unknown(tool, &format!("-{c}")))?;
        let rest = &cluster[at + c.len_utf8()..];
        let written = format!("-{c}");
        if matches!(spec.takes, Takes::Nothing) {
            out.push(Found {
                spec,
                written,
                value: None,
                attached: false,
            });
            continue;
        }
        let attached = (!rest.is_empty()).then(|| rest.to_string());
        let value = take_value(tool, spec, attached, args, i, &written)?;
        out.push(Found {
            spec,
            written,
            value,
            attached: !rest.is_empty(),
        });
        return Ok(());
    }
    Ok(())
}

fn take_value(
    tool: &Tool,
    spec: &Spec,
    attached: Option<String>,
    args: &[String],
    i: &mut usize,
    written: &str,
) -> Result<Option<String>> {
    match spec.takes {
        Takes::Nothing if attached.is_some() => Err(Failure::usage(format!(
            "{}: {written} takes no value",
            tool.name
        ))),
        Takes::Nothing => Ok(None),
        Takes::Value => match attached {
            Some(v) => Ok(Some(v)),
            None if *i < args.len() => {
                *i += 1;
                Ok(Some(args[*i - 1].clone()))
            }
            None => Err(Failure::usage(format!(
                "{}: {written} needs a value",
                tool.name
            ))),
        },
        Takes::Optional(looks_like) => match attached {
            Some(v) => Ok(Some(v)),
            None if *i < args.len() && looks_like(&args[*i]) => {
                *i += 1;
                Ok(Some(args[*i - 1].clone()))
            }
            None => Ok(None),
        },
    }
}

fn unknown(tool: &Tool, written: &str) -> Failure {
    Failure::usage(format!(
        "{0}: unknown option '{written}' (jitterlab {0} takes {1}'s options; see `jitterlab {0} --help` and docs/{0}.md)",
        tool.name, tool.origin
    ))
}

/// The option's value as a whole number; refused, naming the option and `what` was expected,
/// where rt-tests would read a word that is not a number as 0.
pub(super) fn number<T: std::str::FromStr>(tool: &Tool, found: &Found, what: &str) -> Result<T> {
    let text = found.value.as_deref().unwrap_or("");
    text.trim().parse().map_err(|_| {
        Failure::usage(format!(
            "{}: {} '{text}': expected {what}",
            tool.name, found.written
        ))
    })
}

/// rt-tests' parse_time_string, stricter: seconds, or minutes, hours or days with an `m`, `h`
/// or `d` suffix (either case); a word with another suffix is None (rt-tests ignores it).
pub(crate) fn duration_seconds(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let scale = match suffix {
        "" | "s" | "S" => 1,
        "m" | "M" => 60,
        "h" | "H" => 3600,
        "d" | "D" => 86_400,
        _ => return None,
    };
    n.checked_mul(scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    static SPECS: &[Spec] = &[
        spec(Some('q'), "quiet", Takes::Nothing),
        spec(Some('D'), "duration", Takes::Value),
        spec(Some('t'), "threads", Takes::Optional(number_like)),
    ];
    static TOOL: Tool = Tool {
        name: "tool",
        origin: "a tool",
        specs: SPECS,
        example: "-D 60",
    };

    fn cut(line: &str) -> Result<Vec<(&'static str, Option<String>)>> {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        Ok(split(&TOOL, &args)?
            .into_iter()
            .map(|f| (f.spec.long, f.value))
            .collect())
    }

    #[test]
    fn getopt_spellings() {
        let v = |s: &str| Some(s.to_string());
        assert_eq!(
            cut("-qD60 --duration=5 -t -t 3 --threads").unwrap(),
            vec![
                ("quiet", None),
                ("duration", v("60")),
                ("duration", v("5")),
                ("threads", None),
                ("threads", v("3")),
                ("threads", None)
            ]
        );
        assert_eq!(cut("-D -q").unwrap(), vec![("duration", v("-q"))]);
    }

    #[test]
    fn what_is_not_an_option_is_named() {
        let err = |line: &str| cut(line).unwrap_err().message;
        assert!(err("-x").contains("tool: unknown option '-x'"));
        assert!(err("--quiet=1").contains("--quiet takes no value"));
        assert!(err("-D").contains("-D needs a value"));
        assert!(err("60").contains("'60' is not an option"));
    }

    #[test]
    fn durations_as_rt_tests_reads_them() {
        assert_eq!(duration_seconds("30"), Some(30));
        assert_eq!(duration_seconds("2h"), Some(7200));
        assert_eq!(duration_seconds("20M"), Some(1200));
        assert_eq!(duration_seconds("1d"), Some(86_400));
        assert_eq!(duration_seconds("1ms"), None);
        assert_eq!(duration_seconds("x"), None);
    }
}
