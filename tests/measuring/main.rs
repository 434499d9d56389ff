//! The measuring tier: every test file that holds the measuring lock (`common::exclusive()`)
//! for some of its tests, one module each, in one binary. Its tests measure latency on this
//! machine, with ground truth and tolerances; each takes the lock, so that no two measurements
//! (of this binary, of a bench, of another checkout) run at once. The offline tier is
//! tests/offline/main.rs; the wake-method grid (tests/wake_grid.rs) is a binary of its own.

#[path = "../common/mod.rs"]
mod common;
#[path = "../monitor_support/mod.rs"]
mod monitor_support;

mod action_targets;
mod actions;
mod actions_end;
mod actions_trace;
mod bad_input;
mod budget;
mod counters;
mod cpu_time;
mod cyclictest;
mod dropin_mlock;
mod dropin_outputs;
mod ground_truth;
mod hostile_files;
mod hostile_lifecycle;
mod hostile_paths;
mod inversion;
mod ipc;
mod ipc_trace;
mod keep_up;
mod killed_leftovers;
mod lava;
mod layout;
mod load_cpuset;
mod load_logs;
mod load_loops;
mod loads;
mod monitor;
mod monitor_prometheus;
mod noise;
mod oracle;
mod oslat;
mod pm_qos;
mod report;
mod report_tables;
mod result_files;
mod run;
mod samples_format;
mod scenario;
mod scenario_wakeups;
mod segments;
mod session;
mod signal_setup;
mod snapshot_limit;
mod startup;
mod starvation;
mod starvation_guard;
mod stderr_stall;
mod summaries;
mod sweep;
mod tails;
mod timerlat;
mod trace;
mod trace_armed_late;
mod trace_reduction;
mod tune;
