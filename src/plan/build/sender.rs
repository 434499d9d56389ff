//! `--sender-cpu`, `--sender-priority`, `--ipc-between` and `--ipc-pace` to a [`SenderSpec`],
//! for the wake methods where another thread or process sends the wake; refused with any other
//! method.

use crate::error::{Failure, Result};
use crate::measure::wake::Schedule;
use crate::measure::wake::ipc::{Between, Pace};
use crate::measure::{PolicyKind, WakeMethod};
use crate::plan::options::SenderOptions;
use crate::plan::{SenderCpu, SenderSpec};

/// The senders of a run of `wake` on `cpus` under `policy` at the receivers' `priority`.
pub(crate) fn resolve_sender(
    args: &SenderOptions,
    wake: &WakeMethod,
    policy: PolicyKind,
    priority: i32,
    cpus: &[usize],
    online: &[usize],
) -> Result<Option<SenderSpec>> {
    if wake.schedule != Schedule::Sender {
        let given = [
            args.sender_cpu.as_ref().map(|_| "--sender-cpu"),
            args.sender_priority.map(|_| "--sender-priority"),
            args.ipc_between.as_ref().map(|_| "--ipc-between"),
            args.ipc_pace.as_ref().map(|_| "--ipc-pace"),
        ];
        if let Some(flag) = given.into_iter().flatten().next() {
            return Err(Failure::usage(format!(
                "{flag}: --wake {} has no sender thread; it applies to the IPC wake methods (signal, sigwait, mq, mutex, sem, sysv-sem, futex, pipe, eventfd, condvar)",
                wake.name
            )));
        }
        return Ok(None);
    }
    if policy == PolicyKind::Deadline {
        return Err(Failure::usage(format!(
            "--wake {} with --policy deadline: the sender is pinned next to its receiver, and SCHED_DEADLINE threads cannot be pinned; use --policy fifo or rr",
            wake.name
        )));
    }
    let cpu = match args.sender_cpu.as_deref() {
        None | Some("same") => SenderCpu::Same,
        Some("other") => SenderCpu::Other,
        Some(text) => match text.parse::<usize>() {
            Ok(n) if online.contains(&n) => SenderCpu::Cpu(n),
            Ok(n) => {
                return Err(Failure::usage(format!(
                    "--sender-cpu {n}: CPU {n} is not online; name an online CPU, or same or other"
                )));
            }
            Err(_) => {
                return Err(Failure::usage(format!(
                    "--sender-cpu {}: expected same, other or a CPU number",
                    crate::error::escape_controls(text)
                )));
            }
        },
    };
    let cpus = cpus
        .iter()
        .map(|&receiver| match cpu {
            SenderCpu::Same => Ok(receiver),
            SenderCpu::Cpu(n) => Ok(n),
            SenderCpu::Other => other_cpu(receiver, online).ok_or_else(|| {
                Failure::system(format!(
                    "--sender-cpu other: CPU {receiver} is the only online CPU; use --sender-cpu same"
                ))
            }),
        })
        .collect::<Result<Vec<usize>>>()?;
    let priority = match args.sender_priority {
        None => priority,
        Some(p) => {
            let (range, _) = policy.priorities();
            if !range.contains(&p) || *range.end() == 0 {
                return Err(Failure::usage(format!(
                    "--sender-priority {p}: --policy {} takes priorities {}..={}; {}",
                    policy.name(),
                    range.start(),
                    range.end(),
                    if *range.end() == 0 {
                        "omit --sender-priority (senders run under the run's policy), or use --policy fifo or rr"
                    } else {
                        "real-time priorities are 1 to 99"
                    }
                )));
            }
            p
        }
    };
    Ok(Some(SenderSpec {
        cpu,
        cpus,
        priority,
        between: named(
            "--ipc-between",
            args.ipc_between.as_deref(),
            Between::named,
            &Between::NAMES,
        )?,
        pace: named(
            "--ipc-pace",
            args.ipc_pace.as_deref(),
            Pace::named,
            &Pace::NAMES,
        )?,
    }))
}

/// The value of `flag` named `text` (its default when not given), or the usage error.
fn named<T: Default>(
    flag: &str,
    text: Option<&str>,
    by_name: fn(&str) -> Option<T>,
    names: &[&str],
) -> Result<T> {
    match text {
        None => Ok(T::default()),
        Some(text) => by_name(text).ok_or_else(|| {
            Failure::usage(format!(
                "{flag} {}: expected {}",
                crate::error::escape_controls(text),
                names.join(" or ")
            ))
        }),
    }
}

/// The next online CPU after `cpu`, wrapping around; None if it is the only one.
fn other_cpu(cpu: usize, online: &[usize]) -> Option<usize> {
    online
        .iter()
        .copied()
        .find(|&c| c > cpu)
        .or_else(|| online.iter().copied().find(|&c| c != cpu))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(cpu: Option<&str>, priority: Option<i32>) -> SenderOptions {
        SenderOptions {
            sender_cpu: cpu.map(String::from),
            sender_priority: priority,
            ..Default::default()
        }
    }

    fn method(name: &str) -> &'static WakeMethod {
        WakeMethod::named(name).unwrap()
    }

    #[test]
    fn senders_default_to_the_receivers_cpu_and_priority() {
        let spec = resolve_sender(
            &args(None, None),
            method("mq"),
            PolicyKind::Fifo,
            95,
            &[0, 1],
            &[0, 1],
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (spec.cpu, spec.cpus, spec.priority, spec.between, spec.pace),
            (
                SenderCpu::Same,
                vec![0, 1],
                95,
                Between::Threads,
                Pace::SenderTimer
            )
        );
    }

    #[test]
    fn between_and_pace_are_read_by_name() {
        let given = SenderOptions {
            ipc_between: Some("processes".into()),
            ipc_pace: Some("receiver".into()),
            ..Default::default()
        };
        let spec = resolve_sender(&given, method("sysv-sem"), PolicyKind::Fifo, 95, &[0], &[0])
            .unwrap()
            .unwrap();
        assert_eq!(
            (spec.between, spec.pace),
            (Between::Processes, Pace::Receiver)
        );
        let bad = |a: SenderOptions, wake: &str| {
            resolve_sender(&a, method(wake), PolicyKind::Fifo, 95, &[0], &[0])
                .unwrap_err()
                .to_string()
        };
        let forks = SenderOptions {
            ipc_between: Some("forks".into()),
            ..Default::default()
        };
        assert!(bad(forks, "mq").contains("expected threads or processes"));
        let pace = SenderOptions {
            ipc_pace: Some("receiver".into()),
            ..Default::default()
        };
        assert!(
            bad(pace, "clock-nanosleep")
                .contains("--ipc-pace: --wake clock-nanosleep has no sender")
        );
    }

    #[test]
    fn other_is_the_next_online_cpu_wrapping() {
        let spec = resolve_sender(
            &args(Some("other"), Some(80)),
            method("futex"),
            PolicyKind::Fifo,
            95,
            &[0, 2, 3],
            &[0, 2, 3],
        )
        .unwrap()
        .unwrap();
        assert_eq!((spec.cpus, spec.priority), (vec![2, 3, 0], 80));
        let alone = resolve_sender(
            &args(Some("other"), None),
            method("pipe"),
            PolicyKind::Fifo,
            95,
            &[0],
            &[0],
        );
        assert!(alone.unwrap_err().to_string().contains("only online CPU"));
    }

    #[test]
    fn refusals_name_the_option() {
        let err = |a: SenderOptions, wake: &str, policy| {
            resolve_sender(&a, method(wake), policy, 95, &[0], &[0, 1])
                .unwrap_err()
                .to_string()
        };
        assert!(
            err(args(Some("1"), None), "clock-nanosleep", PolicyKind::Fifo)
                .contains("no sender thread")
        );
        assert!(err(args(Some("7"), None), "mq", PolicyKind::Fifo).contains("not online"));
        assert!(err(args(Some("x"), None), "mq", PolicyKind::Fifo).contains("same, other"));
        assert!(err(args(None, Some(100)), "mq", PolicyKind::Fifo).contains("1..=99"));
        assert!(
            err(args(None, Some(5)), "mq", PolicyKind::Other).contains("omit --sender-priority")
        );
        assert!(err(args(None, None), "mq", PolicyKind::Deadline).contains("cannot be pinned"));
    }
}
