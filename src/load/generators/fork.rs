//! `fork`: forks and reaps processes as fast as possible, or at `rate` forks per second, with
//! at most `count` children alive at once per worker (FirmTimers `generate_load -p`). Each child
//! ties itself to its parent (parent-death signal) and exits at once, so the load is the
//! kernel's fork, exit and wait paths.

use crate::format::run_record::Throughput;
use crate::load::generator::{Generator, GeneratorInfo, LoopUnit, Parameter, Syntax};
use crate::load::spec::Params;
use crate::load::worker_kit::{Counts, Ctx, fork_child, reap, run_threads};
use crate::measure::clock::monotonic_ns;
use crate::sys::process::Pid;
use std::collections::VecDeque;

pub(crate) static INFO: GeneratorInfo = GeneratorInfo {
    name: "fork",
    about: "forks and reaps short-lived processes, as fast as possible or at a rate",
    syntax: Syntax::Parameters,
    parameters: &[
        Parameter {
            name: "count",
            default: "16",
            help: "children alive at once, per worker (1-4096)",
        },
        Parameter {
            name: "rate",
            default: "",
            help: "forks per second, all workers together (1-1000000); none: as fast as possible",
        },
    ],
    counters: &["forks", "reaped"],
    loop_unit: Some(LoopUnit {
        counter: FORKS,
        what: "one fork of a child that exits at once (every child is reaped before the worker ends)",
    }),
    parse: |p| Ok(Box::new(ForkLoad::parse(p)?)),
};
const FORKS: usize = 0;
const REAPED: usize = 1;

#[derive(Debug)]
struct ForkLoad {
    /// Children alive at once, per worker.
    pub count: usize,
    /// Forks per second, all workers together; None: as fast as possible.
    pub rate: Option<u64>,
}

impl ForkLoad {
    fn parse(p: &mut Params) -> Result<Self, String> {
        Ok(ForkLoad {
            count: p.int("count", 1..=4096, Some(16))?.unwrap() as usize,
            rate: p.int("rate", 1..=1_000_000, None)?.map(|r| r as u64),
        })
    }
}

impl Generator for ForkLoad {
    fn info(&self) -> &'static GeneratorInfo {
        &INFO
    }

    /// Its thread and up to `count` children alive.
    fn tasks_per_worker(&self) -> u64 {
        1 + self.count as u64
    }

    fn run(&self, ctx: &Ctx) -> Result<(), String> {
        let period_ns = self.rate.map(|r| 1_000_000_000 * ctx.workers as u64 / r);
        run_threads(ctx.workers, "fork", |i| {
            let mut alive: VecDeque<Pid> = VecDeque::with_capacity(self.count);
            let mut due = monotonic_ns();
            let mut done = 0;
            while ctx.keep_looping(done) {
                if alive.len() >= self.count {
                    reap_one(&mut alive, ctx, i)?;
                }
                if let Some(period) = period_ns {
                    due += period;
                    let now = monotonic_ns();
                    if due > now {
                        std::thread::sleep(std::time::Duration::from_nanos(due - now));
                    }
                }
                let pid = fork_child(|| 0).map_err(|e| {
                    crate::load::task_guard::fork_failed(&format!("fork worker {i}"), &e)
                })?;
                alive.push_back(pid);
                ctx.add(FORKS, 1);
                done += 1;
            }
            while !alive.is_empty() {
                reap_one(&mut alive, ctx, i)?;
            }
            Ok(())
        })
    }

    fn throughput(&self, c: &Counts) -> Vec<Throughput> {
        vec![
            c.rate("forks", c.get(FORKS), 1.0, "forks/s"),
            c.total("reaped", c.get(REAPED), "processes"),
        ]
    }
}

fn reap_one(alive: &mut VecDeque<Pid>, ctx: &Ctx, worker: usize) -> Result<(), String> {
    let pid = alive.pop_front().expect("a child to reap");
    reap(pid).map_err(|e| format!("fork worker {worker}: waitpid failed: {e}"))?;
    ctx.add(REAPED, 1);
    Ok(())
}
