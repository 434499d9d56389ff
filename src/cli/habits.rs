//! cyclictest habits on the commands that measure latency (`run`, `sweep`, `monitor`): option
//! spellings that mean something else here, or nothing, get a one-line hint and exit 2 instead
//! of clap's generic error or, for `-h 400`, its help and exit 0 (a script would "succeed"
//! having measured nothing). Consulted only when clap refuses the command line or would print
//! help, so a command line clap takes is never second-guessed.

/// The commands whose options overlap cyclictest's.
const LATENCY_COMMANDS: &[&str] = &["run", "sweep", "monitor"];

/// The hint for the first cyclictest habit in `args` (the words after the program name), or
/// None when there is none, or when the command is not one that measures latency.
pub fn hint(args: &[String]) -> Option<String> {
    let command = args.first()?;
    if !LATENCY_COMMANDS.contains(&command.as_str()) {
        return None;
    }
    let rest = &args[1..];
    rest.iter().enumerate().find_map(|(i, word)| {
        let next = rest.get(i + 1).map(String::as_str);
        habit(word, next).map(|h| format!("{command}: {h}"))
    })
}

/// The hint for one word (with the word after it, for `-h 400`).
fn habit(word: &str, next: Option<&str>) -> Option<String> {
    let numeric = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    let histogram = match word {
        "--histogram" | "--histofall" => true,
        _ if word.starts_with("--histogram=") || word.starts_with("--histofall=") => true,
        // `-h 400`, `-h400`, `-H 400`: a bare `-h` is still a request for help.
        "-h" | "-H" => next.is_some_and(numeric),
        _ => ["-h", "-H"]
            .iter()
            .any(|f| word.strip_prefix(f).is_some_and(numeric)),
    };
    if histogram {
        return Some(format!(
            "{word}: histogram: jitterlab keeps a full histogram; for cyclictest's -h output use `jitterlab cyclictest`"
        ));
    }
    let long = match word {
        "--mlockall" => Some('m'),
        "--smp" => Some('S'),
        "--threads" => Some('t'),
        _ if word.starts_with("--threads=") => Some('t'),
        _ => None,
    };
    let flags: Vec<char> = match long {
        Some(c) => vec![c],
        // A cluster of single-letter flags such as `-m`, `-Sm`, `-t4` (cyclictest's spellings).
        None => word
            .strip_prefix('-')
            // `-1ms` is a negative value, not flags (L6-a: it read as `-m`).
            .filter(|w| !w.starts_with('-') && !w.starts_with(|c: char| c.is_ascii_digit()))
            .map(|w| {
                w.trim_end_matches(|c: char| c.is_ascii_digit())
                    .chars()
                    .collect()
            })
            .unwrap_or_default(),
    };
    flags
        .iter()
        .find_map(|&c| default_for(c))
        .map(|h| format!("{word}: {h}"))
}

/// What jitterlab does by default where cyclictest needs the flag.
fn default_for(flag: char) -> Option<&'static str> {
    match flag {
        'm' => Some(
            "memory is locked by default (mlockall, and the measuring threads' stacks pre-faulted); --no-mlock turns it off",
        ),
        'S' => Some(
            "every online CPU is measured by default, one pinned thread each at the same priority; --cpus LIST chooses the CPUs",
        ),
        't' => {
            Some("one pinned thread per online CPU is the default; --cpus LIST chooses the CPUs")
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(line: &str) -> Option<String> {
        hint(
            &line
                .split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>(),
        )
    }

    #[test]
    fn cyclictest_spellings_get_a_hint() {
        let h = of("run -h 400 -D 30s").unwrap();
        assert!(
            h.starts_with("run: -h: histogram: jitterlab keeps a full histogram"),
            "{h}"
        );
        assert!(h.contains("`jitterlab cyclictest`"));
        assert!(of("run -h400").unwrap().contains("histogram"));
        assert!(of("sweep --histogram=100").unwrap().contains("histogram"));
        assert!(
            of("run -m")
                .unwrap()
                .contains("memory is locked by default")
        );
        assert!(of("run --mlockall").unwrap().contains("memory is locked"));
        assert!(of("run -S").unwrap().contains("every online CPU"));
        assert!(
            of("run -t 4")
                .unwrap()
                .contains("one pinned thread per online CPU")
        );
        assert!(of("run -t4").unwrap().contains("one pinned thread"));
        assert!(of("monitor -qm").unwrap().contains("memory is locked"));
    }

    #[test]
    fn other_words_and_commands_get_none() {
        assert_eq!(of("run -h"), None);
        assert_eq!(of("run --help"), None);
        assert_eq!(of("run --duration 1s -q"), None);
        assert_eq!(of("report -m"), None);
        assert_eq!(of("run --cpus 0-1 --out m"), None);
        assert_eq!(of("run --action-gap -1ms"), None);
    }
}
