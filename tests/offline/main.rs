//! The offline tier: tests that measure nothing (imports, exports, compare, report views,
//! doctor on recorded inputs, deployment files, hostile inputs to the readers, the module and libc
//! boundaries), one module each, in one binary. They run on any machine, real-time or not, and
//! never hold the measuring lock. The measuring tier is tests/measuring/main.rs.

#[path = "../common/mod.rs"]
mod common;

mod architecture;
mod big_events;
mod big_inputs;
mod budgets;
mod cli_help;
mod compare;
mod cyclictest;
mod damaged_events;
mod deploy;
mod docs_match;
mod doctor;
mod dropin_plans;
mod dropin_state;
mod exit_codes;
mod export;
mod export_formats;
mod format_tables;
mod hostile_readers;
mod import;
mod import_formats;
mod import_noise;
mod import_pasted;
mod import_report;
mod import_rtla;
mod kernel_functions;
mod kernel_state;
mod killed_run;
mod kinds;
mod lab_options;
mod lab_results;
mod layers;
mod newcomer;
mod oslat;
mod output_paths;
mod public_surface;
mod readers;
mod report_figures;
mod reproducing;
mod sample_fixture;
mod scan;
mod signals_setup;
mod spawners;
mod stdout_writer;
mod sys_boundary;
mod timerlat;
mod tune;
mod writers;
