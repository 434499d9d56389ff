//! `cpu`: workers spinning in user space without syscalls (FirmTimers `generate_load -c`).
//! Each worker is a thread pinned to one CPU of the load's set, in turn; it runs a multiply-add
//! chain and adds its iterations to a shared counter every 100 000 of them (well under a
//! millisecond), where it also looks at the stop flag: one atomic add and one load per batch.

use crate::format::run_record::Throughput;
use crate::load::generator::{Generator, GeneratorInfo, Syntax};
use crate::load::worker_kit::{Counts, Ctx, run_threads};
use crate::measure::sched::pin_current_thread;

pub(crate) static INFO: GeneratorInfo = GeneratorInfo {
    name: "cpu",
    about: "workers spinning in user space without syscalls, one per CPU by default",
    syntax: Syntax::Parameters,
    parameters: &[],
    counters: &["iterations"],
    loop_unit: None,
    parse: |_| Ok(Box::new(CpuLoad)),
};
const ITERATIONS: usize = 0;
const BATCH: u64 = 100_000;

#[derive(Debug)]
struct CpuLoad;

impl Generator for CpuLoad {
    fn info(&self) -> &'static GeneratorInfo {
        &INFO
    }

    /// One worker per CPU of the load's set.
    fn default_workers(&self, cpus: &[usize]) -> usize {
        cpus.len().max(1)
    }

    fn run(&self, ctx: &Ctx) -> Result<(), String> {
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

    fn throughput(&self, c: &Counts) -> Vec<Throughput> {
        vec![c.rate("spin", c.get(ITERATIONS), 1e-6, "M iterations/s")]
    }
}
