//! Kernel checks: preemption model, tick rate, timers, clocksource, CPU isolation, timer
//! migration, lockup watchdogs and debugging options, one module per concern:
//! `preemption` (the model, from every source there is), `timers` (tick, high-resolution
//! timers, clocksource, timer migration), `housekeeping` (isolation of the measured CPUs,
//! watchdogs) and `debug_options` (the kernel config's debugging options).

mod debug_options;
mod housekeeping;
mod preemption;
mod timers;

pub(crate) use debug_options::debug_options;
pub(crate) use housekeeping::{isolation, watchdogs};
pub(crate) use preemption::{preemption, read_preemption};
pub(crate) use timers::{clock_res_ns, clocksource, hrtimers, hz, tick_hz, timer_migration};
