//! The kernel functions behind the spikes (the MontaVista slides' "longest paths"): from the
//! culprits' kernel stacks of the explained late wakeups (`--trace`, BPF back end), each kernel
//! function ranked by the number of those stacks it is in, with the worst latency among them.
//! A stack counts a function once however often it recurs in it; frames without a symbol
//! (kernel symbols hidden) name no function and are counted apart.

use crate::format::events::SpikeExplanation;
use crate::units::format_ns_signed;
use std::collections::BTreeMap;

/// One kernel function of the culprits' stacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FunctionRank {
    /// `schedule`, or `e1000_clean [e1000e]` for a module's function.
    pub(crate) function: String,
    /// The stacks it is in.
    pub(crate) stacks: u64,
    /// The largest latency among those late wakeups, ns.
    pub(crate) worst_ns: i64,
}

/// The ranking of the functions in the stacks of `spikes`, most stacks first (then worst
/// latency, then name), and how many stacks were counted.
pub(crate) fn rank<'a>(
    spikes: impl IntoIterator<Item = &'a SpikeExplanation>,
) -> (Vec<FunctionRank>, u64) {
    let mut by: BTreeMap<String, (u64, i64)> = BTreeMap::new();
    let mut stacks = 0;
    for s in spikes {
        let Some((_, stack)) = s.culprit_stack() else {
            continue;
        };
        stacks += 1;
        let mut seen: Vec<String> = stack.frames.iter().filter_map(|f| function_of(f)).collect();
        seen.sort();
        seen.dedup();
        for f in seen {
            let e = by.entry(f).or_insert((0, i64::MIN));
            e.0 += 1;
            e.1 = e.1.max(s.latency_ns);
        }
    }
    let mut out: Vec<FunctionRank> = by
        .into_iter()
        .map(|(function, (stacks, worst_ns))| FunctionRank {
            function,
            stacks,
            worst_ns,
        })
        .collect();
    out.sort_by(|a, b| {
        b.stacks
            .cmp(&a.stacks)
            .then(b.worst_ns.cmp(&a.worst_ns))
            .then(a.function.cmp(&b.function))
    });
    (out, stacks)
}

/// The function a frame names: `schedule+0x4` -> `schedule`, `f+0x1/0x20 [mod]` -> `f [mod]`;
/// None for an address (`0xffffffff81000000`).
fn function_of(frame: &str) -> Option<String> {
    let frame = frame.trim();
    let (symbol, module) = match frame.split_once(' ') {
        Some((s, m)) => (s, Some(m.trim())),
        None => (frame, None),
    };
    if symbol.starts_with("0x") || symbol.is_empty() {
        return None;
    }
    let name = symbol.split('+').next().unwrap_or(symbol);
    Some(match module {
        Some(m) if !m.is_empty() => format!("{name} {m}"),
        _ => name.to_string(),
    })
}

/// The ranking in one line, its first `top` functions: `kernel functions in the 14 culprits'
/// stacks: schedule 14 (worst 3.10 ms), ...`; None without a stack.
pub(crate) fn line(ranks: &[FunctionRank], stacks: u64, top: usize) -> Option<String> {
    if stacks == 0 {
        return None;
    }
    let named: Vec<String> = ranks
        .iter()
        .take(top)
        .map(|r| {
            format!(
                "{} {} (worst {})",
                r.function,
                r.stacks,
                format_ns_signed(r.worst_ns)
            )
        })
        .collect();
    Some(format!(
        "kernel functions in the {stacks} culprits' stacks (stacks holding each): {}{}",
        if named.is_empty() {
            "none named (no kernel symbols)".to_string()
        } else {
            named.join(", ")
        },
        if ranks.len() > top {
            format!(", and {} more", ranks.len() - top)
        } else {
            String::new()
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::events::{Contributor, KernelStack};

    fn spike(latency_ns: i64, frames: &[&str]) -> SpikeExplanation {
        SpikeExplanation {
            time_ns: 0,
            cpu: 0,
            due_ns: 0,
            latency_ns,
            irq_latency_ns: None,
            thread_latency_ns: None,
            verdict: String::new(),
            contributors: vec![Contributor {
                kind: "task".into(),
                name: "hackbench".into(),
                pid: Some(1),
                policy: None,
                prio: None,
                duration_ns: 1,
                stack: (!frames.is_empty()).then(|| KernelStack {
                    frames: frames.iter().map(|f| f.to_string()).collect(),
                    note: None,
                }),
            }],
        }
    }

    #[test]
    fn functions_are_ranked_by_the_stacks_holding_them() {
        let spikes = [
            spike(
                3_000_000,
                &[
                    "__schedule+0x2c4",
                    "schedule+0x4",
                    "unix_stream_sendmsg+0x10",
                ],
            ),
            spike(
                1_000_000,
                &[
                    "__schedule+0x2c4",
                    "e1000_clean+0x1/0x20 [e1000e]",
                    "__schedule+0x2c4",
                ],
            ),
            spike(2_000_000, &["0xffffffff81000000"]),
            spike(9_000_000, &[]),
        ];
        let (ranks, stacks) = rank(spikes.iter());
        assert_eq!(stacks, 3);
        assert_eq!(
            ranks[0],
            FunctionRank {
                function: "__schedule".into(),
                stacks: 2,
                worst_ns: 3_000_000
            }
        );
        let names: Vec<&str> = ranks.iter().map(|r| r.function.as_str()).collect();
        assert_eq!(
            names,
            [
                "__schedule",
                "schedule",
                "unix_stream_sendmsg",
                "e1000_clean [e1000e]"
            ]
        );
        assert_eq!(
            line(&ranks, stacks, 2).unwrap(),
            "kernel functions in the 3 culprits' stacks (stacks holding each): __schedule 2 (worst 3.00 ms), schedule 1 (worst 3.00 ms), and 2 more"
        );
        assert_eq!(line(&[], 0, 5), None);
    }
}
