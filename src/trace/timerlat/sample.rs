//! The lines of the kernel's timerlat tracer, as its instance's `trace_pipe` prints them
//! (kernel/trace/trace_output.c, `trace_timerlat_print`): the usual prefix (task-pid, `[CPU]`,
//! the flags when irq-info is on, the timestamp), then `#SEQ context irq|thread timer_latency
//! N ns`. Two lines per activation: the timer interrupt's latency (`irq`) and the timerlat
//! thread's (`thread`), with the same activation number. A CPU whose ring buffer overflowed
//! gets a line `CPU:N [LOST M EVENTS]` where the lost samples were (`CPU:N [LOST EVENTS]` when
//! the kernel could not store how many). `jitterlab timerlat` reads the entries raw and writes
//! them in this text (raw.rs), so that one parser makes the table of a run and of its file.

/// Which latency a sample is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Context {
    /// The timer interrupt's handler: its start minus the timer's expiry (the IRQ column).
    Irq,
    /// The timerlat thread, once it runs: now minus the timer's expiry (the Thr column).
    Thread,
}

/// One sample of the tracer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub cpu: usize,
    /// The activation number (`#N`): the IRQ and the thread sample of one wakeup share it.
    pub seq: u64,
    pub(crate) context: Context,
    pub latency_ns: u64,
}

/// What one line of the text is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Sample(Sample),
    /// `CPU:N [LOST M EVENTS]`: the ring buffer of CPU N overflowed, M entries are gone (None:
    /// `CPU:N [LOST EVENTS]`, how many not stored).
    Lost {
        cpu: usize,
        events: Option<u64>,
    },
    /// A sample of a context this reader does not count (e.g. `user-ret` of a newer kernel's
    /// user-space threads), or a line that is no sample: counted by the caller, never guessed.
    Other,
}

/// Reads one line (without its newline).
pub(crate) fn parse_line(line: &str) -> Line {
    if let Some(lost) = parse_lost(line) {
        return lost;
    }
    let Some(at) = line.find(" context ") else {
        return Line::Other;
    };
    let (prefix, rest) = (&line[..at], &line[at + " context ".len()..]);
    let mut words = rest.split_whitespace();
    let context = match words.next() {
        Some("irq") => Context::Irq,
        Some("thread") => Context::Thread,
        _ => return Line::Other,
    };
    let latency_ns = match (words.next(), words.next(), words.next()) {
        (Some("timer_latency"), Some(n), Some("ns")) => match n.parse::<u64>() {
            Ok(n) => n,
            Err(_) => return Line::Other,
        },
        _ => return Line::Other,
    };
    // The prefix's last `#N` is the activation; the last `[N]` before it the CPU (a task name,
    // which comes first, may hold anything, brackets included).
    let tokens: Vec<&str> = prefix.split_whitespace().collect();
    let Some(seq_at) = tokens.iter().rposition(|t| t.starts_with('#')) else {
        return Line::Other;
    };
    let Ok(seq) = tokens[seq_at][1..].parse::<u64>() else {
        return Line::Other;
    };
    let cpu = tokens[..seq_at].iter().rev().find_map(|t| {
        t.strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
            .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse::<usize>().ok())
    });
    match cpu {
        Some(cpu) => Line::Sample(Sample {
            cpu,
            seq,
            context,
            latency_ns,
        }),
        None => Line::Other,
    }
}

fn parse_lost(line: &str) -> Option<Line> {
    let rest = line.trim().strip_prefix("CPU:")?;
    let (cpu, rest) = rest.split_once(' ')?;
    let cpu = cpu.parse().ok()?;
    let rest = rest.trim();
    if rest == "[LOST EVENTS]" {
        return Some(Line::Lost { cpu, events: None });
    }
    let events = rest.strip_prefix("[LOST ")?.strip_suffix(" EVENTS]")?;
    Some(Line::Lost {
        cpu,
        events: Some(events.parse().ok()?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_lines() {
        // Documentation/trace/timerlat-tracer.rst's example.
        assert_eq!(
            parse_line(
                "        <idle>-0       [000] d.h1    54.029328: #1     context    irq timer_latency       932 ns"
            ),
            Line::Sample(Sample {
                cpu: 0,
                seq: 1,
                context: Context::Irq,
                latency_ns: 932
            })
        );
        assert_eq!(
            parse_line(
                "         <...>-867     [001] ....    54.029339: #12     context thread timer_latency     11700 ns"
            ),
            Line::Sample(Sample {
                cpu: 1,
                seq: 12,
                context: Context::Thread,
                latency_ns: 11700
            })
        );
        // A task name with brackets and spaces, and no flags column.
        assert_eq!(
            parse_line("  a [7] b-12 [003]   1.000001: #5 context irq timer_latency 3 ns"),
            Line::Sample(Sample {
                cpu: 3,
                seq: 5,
                context: Context::Irq,
                latency_ns: 3
            })
        );
    }

    #[test]
    fn lost_and_other_lines() {
        assert_eq!(
            parse_line("CPU:1 [LOST 2048 EVENTS]"),
            Line::Lost {
                cpu: 1,
                events: Some(2048)
            }
        );
        assert_eq!(
            parse_line("CPU:0 [LOST EVENTS]"),
            Line::Lost {
                cpu: 0,
                events: None
            }
        );
        for other in [
            "",
            "# tracer: timerlat",
            "   <...>-9 [000] .... 1.0: #1 context user-ret timer_latency 5 ns",
            "   <...>-9 [000] .... 1.0: #1 context irq timer_latency x ns",
            "   <...>-9 .... 1.0: #1 context irq timer_latency 5 ns",
        ] {
            assert_eq!(parse_line(other), Line::Other, "{other}");
        }
    }
}
