//! `hackbench`: the scheduler and IPC benchmark of rt-tests, with its semantics.
//!
//! An exchange: `groups` groups of `fds` receivers and `fds` senders each. Every receiver has
//! its own socket pair (`ipc=socket`, AF_UNIX stream) or pipe (`ipc=pipe`); every sender of a
//! group writes `loops` messages of `datasize` bytes to every receiver of its group, so each
//! receiver reads `fds × loops` messages. Tasks are processes (`mode=process`) or threads
//! (`mode=thread`). All tasks are created first and wait for a start byte; the exchange is
//! timed from that byte until every task has been reaped: rt-tests' `Time:`.
//!
//! As a load it repeats exchanges until stopped; `workers=N` runs N independent exchanges at
//! once. Senders and receivers count what they actually wrote and read, and an exchange
//! counts only when every receiver got every message every sender sent.

use crate::format::run_record::Throughput;
use crate::load::generator::{Generator, GeneratorInfo, Parameter, Syntax};
use crate::load::spec::Params;
use crate::load::worker_kit::{Counts, Ctx, fork_child, reap, run_threads, shared_counters};
use crate::measure::clock::monotonic_ns;
use crate::sys::errno;
use crate::sys::file::{self, close, pipe, socket_pair};
use crate::sys::process;
use crate::sys::signal;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) static INFO: GeneratorInfo = GeneratorInfo {
    name: "hackbench",
    about: "rt-tests' hackbench: groups of senders and receivers over sockets or pipes",
    syntax: Syntax::Parameters,
    parameters: &[
        Parameter {
            name: "groups",
            default: "10",
            help: "groups of senders and receivers (1-1000)",
        },
        Parameter {
            name: "fds",
            default: "20",
            help: "senders = receivers per group (1-1000)",
        },
        Parameter {
            name: "loops",
            default: "100",
            help: "messages per sender per receiver (1-100000000)",
        },
        Parameter {
            name: "datasize",
            default: "100",
            help: "bytes per message (1 B - 1 MiB)",
        },
        Parameter {
            name: "mode",
            default: "process",
            help: "tasks are processes or threads: process, thread",
        },
        Parameter {
            name: "ipc",
            default: "socket",
            help: "each receiver's channel: socket, pipe",
        },
    ],
    counters: &[
        "exchanges",
        "messages_sent",
        "messages_received",
        "exchange_ns_total",
        "last_exchange_ns",
    ],
    loop_unit: None,
    parse: |p| Ok(Box::new(HackbenchLoad::parse(p)?)),
};
const EXCHANGES: usize = 0;
const SENT: usize = 1;
const RECEIVED: usize = 2;
const EXCHANGE_NS_TOTAL: usize = 3;
const LAST_EXCHANGE_NS: usize = 4;

#[derive(Debug)]
struct HackbenchLoad {
    groups: usize,
    fds: usize,
    loops: u64,
    datasize: usize,
    threads: bool,
    pipe: bool,
}

impl HackbenchLoad {
    fn parse(p: &mut Params) -> Result<Self, String> {
        Ok(HackbenchLoad {
            groups: p.int("groups", 1..=1000, Some(10))?.unwrap() as usize,
            fds: p.int("fds", 1..=1000, Some(20))?.unwrap() as usize,
            loops: p.int("loops", 1..=100_000_000, Some(100))?.unwrap() as u64,
            datasize: p.bytes("datasize", 1..=(1 << 20), 100)? as usize,
            threads: p.choice("mode", &["process", "thread"], "process")? == "thread",
            pipe: p.choice("ipc", &["socket", "pipe"], "socket")? == "pipe",
        })
    }

    /// Tasks of one exchange.
    fn tasks(&self) -> usize {
        self.groups * self.fds * 2
    }

    /// Messages of one exchange: every sender to every receiver of its group, `loops` times.
    fn messages(&self) -> u64 {
        (self.groups * self.fds * self.fds) as u64 * self.loops
    }

    /// The two lines hackbench prints before its `Time:`.
    fn banner(&self, workers: usize) -> String {
        format!(
            "Running in {} mode with {} groups using {} file descriptors each (== {} tasks){}\nEach sender will pass {} messages of {} bytes",
            if self.threads { "threaded" } else { "process" },
            self.groups,
            self.fds * 2,
            self.tasks(),
            if workers > 1 {
                format!(", {workers} exchanges at once")
            } else {
                String::new()
            },
            self.loops,
            self.datasize
        )
    }

    /// The work of [`Generator::run`]: exchanges until stopped, or one with `ctx.once`.
    fn repeat_exchanges(&self, ctx: &Ctx) -> Result<(), String> {
        run_threads(ctx.workers, "hackbench", |i| {
            // Each instance counts its exchange's messages here; forked tasks share it.
            let pending = shared_counters(2)
                .map_err(|e| format!("hackbench {i}: cannot map counters: {e}"))?;
            loop {
                if ctx.stopped() {
                    return Ok(());
                }
                let Some(ns) = self.exchange(pending, ctx)? else {
                    return Ok(());
                };
                let sent = pending[0].swap(0, Ordering::Relaxed);
                let received = pending[1].swap(0, Ordering::Relaxed);
                if sent != self.messages() || received != sent {
                    return Err(format!(
                        "hackbench: an exchange ended with {received} messages received, {sent} sent, {} expected",
                        self.messages()
                    ));
                }
                ctx.add(SENT, sent);
                ctx.add(RECEIVED, received);
                ctx.add(EXCHANGE_NS_TOTAL, ns);
                ctx.set(LAST_EXCHANGE_NS, ns);
                ctx.add(EXCHANGES, 1);
                if ctx.once {
                    return Ok(());
                }
            }
        })
    }

    /// One timed exchange; None when it was cut short by the load's stop.
    fn exchange(&self, pending: &'static [AtomicU64], ctx: &Ctx) -> Result<Option<u64>, String> {
        let (ready_r, ready_w) = pipe().map_err(|e| format!("hackbench: pipe: {e}"))?;
        let (wake_r, wake_w) = pipe().map_err(|e| format!("hackbench: pipe: {e}"))?;
        let control = [ready_r, ready_w, wake_r, wake_w];
        let data = vec![0x42u8; self.datasize];
        let mut inbox = vec![0u8; self.datasize];
        let mut pids = Vec::new();
        let mut threads = Vec::new();
        let mut open = Vec::new();
        let result = (|| {
            for _ in 0..self.groups {
                // One channel per receiver: (read end, write end).
                let mut chans = Vec::with_capacity(self.fds);
                for _ in 0..self.fds {
                    let c = if self.pipe { pipe() } else { socket_pair() }
                        .map_err(|e| format!("hackbench: cannot create a channel: {e}; raise the open-file limit (ulimit -n) or use fewer groups"))?;
                    open.extend([c.0, c.1]);
                    chans.push(c);
                }
                let outs: Vec<RawFd> = chans.iter().map(|c| c.1).collect();
                let packets = self.fds as u64 * self.loops;
                for c in &chans {
                    let input = c.0;
                    if self.threads {
                        let mut inbox = vec![0u8; self.datasize];
                        threads.push(spawn_task(move || {
                            receiver(input, packets, &mut inbox, ready_w, wake_r, &pending[1])
                        })?);
                    } else {
                        let inbox = &mut inbox;
                        pids.push(
                            fork_child(|| {
                                receiver(input, packets, inbox, ready_w, wake_r, &pending[1])
                            })
                            .map_err(|e| crate::load::task_guard::fork_failed("hackbench", &e))?,
                        );
                    }
                }
                for _ in 0..self.fds {
                    if self.threads {
                        let (outs, data) = (outs.clone(), data.clone());
                        let loops = self.loops;
                        threads.push(spawn_task(move || {
                            sender(&outs, loops, &data, ready_w, wake_r, &pending[0])
                        })?);
                    } else {
                        pids.push(
                            fork_child(|| {
                                sender(&outs, self.loops, &data, ready_w, wake_r, &pending[0])
                            })
                            .map_err(|e| crate::load::task_guard::fork_failed("hackbench", &e))?,
                        );
                    }
                }
                if !self.threads {
                    // The children hold their own copies; later groups need not inherit these.
                    open.drain(..).for_each(close);
                }
            }
            // Every task is created and waiting: start them all, and time until all are reaped.
            let mut byte = [0u8; 1];
            for _ in 0..self.tasks() {
                if read_full(ready_r, &mut byte) != 0 {
                    return Err("hackbench: a task ended before it was ready".to_string());
                }
            }
            let start = monotonic_ns();
            if write_full(wake_w, b"W") != 0 {
                return Err("hackbench: cannot start the tasks".to_string());
            }
            let mut cut_short = false;
            for pid in pids.drain(..) {
                let status = reap(pid).map_err(|e| format!("hackbench: waitpid: {e}"))?;
                if process::killed_by(status).is_some() || ctx.stopped() {
                    // SIGTERM to the load's process group: the load is being stopped.
                    cut_short = true;
                } else if process::exit_code(status) != 0 {
                    return Err(format!(
                        "hackbench: a task failed (exit status {})",
                        process::exit_code(status)
                    ));
                }
            }
            for t in threads.drain(..) {
                if t.join().unwrap_or(1) != 0 {
                    return Err("hackbench: a task failed".to_string());
                }
            }
            let ns = monotonic_ns() - start;
            Ok((!cut_short).then_some(ns))
        })();
        // On an error, tasks still alive are killed by the load's stop (same process group).
        for pid in pids {
            let _ = process::kill(pid, signal::SIGKILL);
            let _ = reap(pid);
        }
        open.into_iter().chain(control).for_each(close);
        result
    }

    /// hackbench's `Time:` of the last exchange, in seconds, from the counters.
    fn last_time_s(values: &[u64]) -> Option<f64> {
        let ns = *values.get(LAST_EXCHANGE_NS)?;
        (values.get(EXCHANGES).copied().unwrap_or(0) > 0).then_some(ns as f64 / 1e9)
    }
}

impl Generator for HackbenchLoad {
    fn info(&self) -> &'static GeneratorInfo {
        &INFO
    }

    fn run(&self, ctx: &Ctx) -> Result<(), String> {
        self.repeat_exchanges(ctx)
    }

    /// Its thread and the tasks of an exchange.
    fn tasks_per_worker(&self) -> u64 {
        1 + self.tasks() as u64
    }

    fn throughput(&self, c: &Counts) -> Vec<Throughput> {
        let exchanges = c.get(EXCHANGES);
        vec![
            c.total("exchanges", exchanges, "exchanges"),
            c.rate("exchange rate", exchanges, 1.0, "exchanges/s"),
            c.rate("messages", c.get(RECEIVED), 1.0, "messages/s"),
            c.total("messages sent", c.get(SENT), "messages"),
            c.total("messages received", c.get(RECEIVED), "messages"),
            if exchanges > 0 {
                Throughput::new(
                    "mean exchange time",
                    c.get(EXCHANGE_NS_TOTAL) as f64 / exchanges as f64 / 1e9,
                    "s",
                )
            } else {
                // No exchange, no time: a 0 here would read as infinitely fast.
                Throughput::none(
                    "mean exchange time",
                    "s",
                    format!(
                        "no exchange finished in {:.2} s: an exchange of {} tasks takes longer; run longer or use fewer groups",
                        c.seconds,
                        self.tasks()
                    ),
                )
            },
        ]
    }

    /// One exchange, like rt-tests' hackbench.
    fn ends_when_run_once(&self) -> bool {
        true
    }

    fn once_banner(&self, workers: usize) -> Option<String> {
        Some(self.banner(workers))
    }

    fn once_result(&self, values: &[u64]) -> Option<String> {
        Some(match Self::last_time_s(values) {
            Some(t) => format!("Time: {t:.3}"),
            None => "Time: - (the exchange did not complete)".into(),
        })
    }
}

fn spawn_task(
    f: impl FnOnce() -> i32 + Send + 'static,
) -> Result<std::thread::JoinHandle<i32>, String> {
    std::thread::Builder::new()
        .name("jl-hackbench".into())
        .stack_size(64 * 1024)
        .spawn(f)
        .map_err(|e| {
            format!("hackbench: cannot start a thread: {e}; use fewer groups or mode=process")
        })
}

/// Signals readiness and waits for the start byte (rt-tests' `ready()`).
fn ready(ready_w: RawFd, wake_r: RawFd) -> bool {
    if write_full(ready_w, b"R") != 0 {
        return false;
    }
    loop {
        match file::poll_input(wake_r, -1) {
            Ok(Some(_)) => return true,
            Err(e) if e.kind() != std::io::ErrorKind::Interrupted => return false,
            _ => {}
        }
    }
}

/// Async-signal-safe: runs in forked children.
fn sender(
    outs: &[RawFd],
    loops: u64,
    data: &[u8],
    ready_w: RawFd,
    wake_r: RawFd,
    sent: &AtomicU64,
) -> i32 {
    if !ready(ready_w, wake_r) {
        return 2;
    }
    let mut n = 0;
    for _ in 0..loops {
        for &fd in outs {
            if write_full(fd, data) != 0 {
                sent.fetch_add(n, Ordering::Relaxed);
                return 3;
            }
            n += 1;
        }
    }
    sent.fetch_add(n, Ordering::Relaxed);
    0
}

/// Async-signal-safe: runs in forked children.
fn receiver(
    input: RawFd,
    packets: u64,
    inbox: &mut [u8],
    ready_w: RawFd,
    wake_r: RawFd,
    received: &AtomicU64,
) -> i32 {
    if !ready(ready_w, wake_r) {
        return 2;
    }
    let mut n = 0;
    for _ in 0..packets {
        if read_full(input, inbox) != 0 {
            received.fetch_add(n, Ordering::Relaxed);
            return 3;
        }
        n += 1;
    }
    received.fetch_add(n, Ordering::Relaxed);
    0
}

/// Writes all of `buf`; 0 or an errno.
fn write_full(fd: RawFd, buf: &[u8]) -> i32 {
    let mut done = 0;
    while done < buf.len() {
        let r = file::write_raw(fd, &buf[done..]);
        if r < 0 {
            let e = std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(errno::EIO);
            if e == errno::EINTR {
                continue;
            }
            return e;
        }
        done += r as usize;
    }
    0
}

/// Reads exactly `buf.len()` bytes; 0, or an errno (EPIPE for an early end of stream).
fn read_full(fd: RawFd, buf: &mut [u8]) -> i32 {
    let mut done = 0;
    while done < buf.len() {
        let r = file::read_raw(fd, &mut buf[done..]);
        if r < 0 {
            let e = std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(errno::EIO);
            if e == errno::EINTR {
                continue;
            }
            return e;
        }
        if r == 0 {
            return errno::EPIPE;
        }
        done += r as usize;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_rt_tests_defaults() {
        let mut p = Params::parse("hackbench").unwrap();
        let h = HackbenchLoad::parse(&mut p).unwrap();
        assert_eq!((h.groups, h.fds, h.loops, h.datasize), (10, 20, 100, 100));
        assert!(!h.threads && !h.pipe);
        assert_eq!(h.tasks(), 400);
        assert_eq!(h.messages(), 10 * 20 * 20 * 100);
        let mut p = Params::parse("hackbench:mode=thread,ipc=pipe,groups=2").unwrap();
        let h = HackbenchLoad::parse(&mut p).unwrap();
        assert!(h.threads && h.pipe);
        let mut p = Params::parse("hackbench:mode=fiber").unwrap();
        assert!(
            HackbenchLoad::parse(&mut p)
                .unwrap_err()
                .contains("process, thread")
        );
    }

    /// Issue 23: `load hackbench:groups=40 --duration 1s` finished no exchange and printed
    /// "mean exchange time 0 s". No exchange is no time: null in run.json, "none" with the
    /// reason on the terminal, and a warning.
    #[test]
    fn no_exchange_finished_is_no_exchange_time() {
        use crate::format::run_record::{LoadRecord, format_throughput, no_value_warnings};
        let mut p = Params::parse("hackbench:groups=40").unwrap();
        let h = HackbenchLoad::parse(&mut p).unwrap();
        let figures = h.throughput(&Counts::new(&[0, 0, 0, 0, 0], 1_000_000_000));
        let mean = figures
            .iter()
            .find(|t| t.name == "mean exchange time")
            .unwrap();
        assert_eq!(mean.value, None);
        let line = format_throughput(&figures);
        assert!(
            line.contains(
                "mean exchange time: none (no exchange finished in 1.00 s: an exchange of 1600 tasks takes longer"
            ),
            "{line}"
        );
        assert!(!line.contains("mean exchange time 0 s"), "{line}");
        let record = LoadRecord {
            spec: "hackbench:groups=40".into(),
            kind: "hackbench".into(),
            throughput: figures,
            ended: None,
            end_reason: None,
            log: None,
        };
        let json = serde_json::to_value(&record).unwrap();
        let mean = json["throughput"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "mean exchange time")
            .unwrap();
        assert!(mean["value"].is_null(), "{mean}");
        let warnings = no_value_warnings(&record);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with(
                "load hackbench:groups=40: no mean exchange time: no exchange finished in 1.00 s"
            ),
            "{warnings:?}"
        );
        // Two exchanges of 0.5 s each: the mean is there.
        let figures = h.throughput(&Counts::new(&[2, 0, 0, 1_000_000_000, 0], 2_000_000_000));
        let mean = figures.iter().find(|t| t.name == "mean exchange time");
        assert_eq!(mean.unwrap().value, Some(0.5));
    }
}
