//! `fork`: forks and reaps processes as fast as possible, or at `rate` forks per second, with
//! at most `count` children alive at once per worker (FirmTimers `generate_load -p`). Each child
//! ties itself to its parent (parent-death signal) and exits at once, so the load is the
//! kernel's fork, exit and wait paths.

use super::generator::Rates;
use super::spec::Params;
use super::worker::{Ctx, fork_child, reap, run_threads};
use crate::measure::clock::monotonic_ns;
use crate::results::run_record::Throughput;
use std::collections::VecDeque;

pub const PARAMETERS: &[&str] = &["count", "rate"];
pub const COUNTERS: &[&str] = &["forks", "reaped"];
const FORKS: usize = 0;
const REAPED: usize = 1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkSpec {
    /// Children alive at once, per worker.
    pub count: usize,
    /// Forks per second, all workers together; None: as fast as possible.
    pub rate: Option<u64>,
}

impl ForkSpec {
    pub fn parse(p: &mut Params) -> Result<Self, String> {
        Ok(ForkSpec {
            count: p.int("count", 1..=4096, Some(16))?.unwrap() as usize,
            rate: p.int("rate", 1..=1_000_000, None)?.map(|r| r as u64),
        })
    }

    pub fn run(&self, ctx: &Ctx) -> Result<(), String> {
        let period_ns = self.rate.map(|r| 1_000_000_000 * ctx.workers as u64 / r);
        run_threads(ctx.workers, "fork", |i| {
            let mut alive: VecDeque<libc::pid_t> = VecDeque::with_capacity(self.count);
            let mut due = monotonic_ns();
            while !ctx.stopped() {
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
                let pid =
                    fork_child(|| 0).map_err(|e| format!("fork worker {i}: fork failed: {e}"))?;
                alive.push_back(pid);
                ctx.add(FORKS, 1);
            }
            while !alive.is_empty() {
                reap_one(&mut alive, ctx, i)?;
            }
            Ok(())
        })
    }
}

fn reap_one(alive: &mut VecDeque<libc::pid_t>, ctx: &Ctx, worker: usize) -> Result<(), String> {
    let pid = alive.pop_front().expect("a child to reap");
    reap(pid).map_err(|e| format!("fork worker {worker}: waitpid failed: {e}"))?;
    ctx.add(REAPED, 1);
    Ok(())
}

pub fn throughput(v: &dyn Fn(usize) -> u64, r: &Rates) -> Vec<Throughput> {
    vec![
        r.rate("forks", v(FORKS), 1.0, "forks/s"),
        r.total("reaped", v(REAPED), "processes"),
    ]
}
