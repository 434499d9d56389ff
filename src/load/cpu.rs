//! `cpu`: workers spinning in user space without syscalls (FirmTimers `generate_load -c`).
//! Each worker is a thread pinned to one CPU of the load's set, in turn; it runs a multiply-add
//! chain and adds its iterations to a shared counter every 100 000 of them (well under a
//! millisecond), where it also looks at the stop flag: one atomic add and one load per batch.

use super::generator::Rates;
use super::spec::Params;
use super::worker::{Ctx, run_threads};
use crate::measure::sched::pin_current_thread;
use crate::results::run_record::Throughput;

pub const PARAMETERS: &[&str] = &[];
pub const COUNTERS: &[&str] = &["iterations"];
const ITERATIONS: usize = 0;
const BATCH: u64 = 100_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuSpec;

impl CpuSpec {
    pub fn parse(_p: &mut Params) -> Result<Self, String> {
        Ok(CpuSpec)
    }

    pub fn run(&self, ctx: &Ctx) -> Result<(), String> {
        run_threads(ctx.workers, "cpu", |i| {
            let cpu = ctx.cpus[i % ctx.cpus.len()];
            pin_current_thread(cpu)
                .map_err(|e| format!("cpu worker {i}: cannot pin to CPU {cpu}: {e}"))?;
            let mut x: u64 = i as u64 + 1;
            while !ctx.stopped() {
                for _ in 0..BATCH {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                }
                std::hint::black_box(x);
                ctx.add(ITERATIONS, BATCH);
            }
            Ok(())
        })
    }
}

pub fn throughput(v: &dyn Fn(usize) -> u64, r: &Rates) -> Vec<Throughput> {
    vec![r.rate("spin", v(ITERATIONS), 1e-6, "M iterations/s")]
}
