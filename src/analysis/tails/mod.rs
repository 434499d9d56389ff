//! Tails and rates (issue 16): what the far end of a latency distribution says and how sure
//! we can be of it. Each module is a pure function of plain data (slices of latencies, spike
//! times, HDR histograms), so the recorder, the interval log and `--samples` files can all
//! feed it; the methods, their assumptions and their labels are documented in docs/tails.md.
//!
//! - [`exceedance`]: "x % of wakeups within y", with the exact counts.
//! - [`spikes`]: spikes over a threshold, their rate (exact Poisson interval), MTBF and period.
//! - [`interval_spikes`]: spikes estimated from the interval log's maxima, for runs without
//!   the recorder's spike record (imported runs, older files).
//! - [`firm`]: (m,k)-firm deadlines, counted one period at a time.
//! - [`evt`]: the extrapolated worst case (peaks over threshold, generalized Pareto) with the
//!   checks that must pass before it is shown.
//! - [`run_length`]: what a run of N wakeups can claim, and how much longer to run.

pub(crate) mod evt;
pub mod exceedance;
pub mod firm;
pub(crate) mod interval_spikes;
pub(crate) mod run_length;
pub(crate) mod special;
pub mod spikes;
