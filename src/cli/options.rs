//! clap's parse to the plain option groups the plan is built from ([`crate::plan::options`]):
//! one conversion per clap group, and one per measuring command that puts its groups together
//! (what a command does not flatten is the group's default, or none: a monitor has no length).

use super::groups::{
    ActionArgs, CpuArgs, LatencyArgs, LengthArgs, LoadsArgs, OutputArgs, TraceArgs,
};
use super::{InversionArgs, LatencyRunArgs, MonitorArgs, NoiseArgs, RunArgs, SenderArgs};
use crate::plan::build::MeasuredKindRow;
use crate::plan::options::{
    ActionOptions, CpuOptions, InversionOptions, LatencyOptions, LatencyRunOptions, LengthOptions,
    LoadOptions, NoiseOptions, NoiseRunOptions, OutputOptions, RecordOptions, SenderOptions,
    SharedOptions, TraceOptions,
};
use std::path::Path;

impl LengthArgs {
    fn options(&self, loops: Option<u64>, scenario: Option<&Path>) -> LengthOptions {
        LengthOptions {
            duration: self.duration.clone(),
            loops,
            scenario: scenario.map(Path::to_path_buf),
        }
    }
}

impl From<&CpuArgs> for CpuOptions {
    fn from(a: &CpuArgs) -> Self {
        CpuOptions {
            cpus: a.cpus.clone(),
            priority: a.priority,
            no_mlock: a.no_mlock,
            pm_qos: a.pm_qos.clone(),
            idle_state_max: a.idle_state_max,
            allow_shared_cpus: a.allow_shared_cpus,
            ring_size: a.ring_size,
            drain_priority: a.drain_priority.clone(),
            housekeeping: a.housekeeping.clone(),
            cpuset_partition: a.cpuset_partition,
        }
    }
}

impl From<&LoadsArgs> for LoadOptions {
    fn from(a: &LoadsArgs) -> Self {
        LoadOptions {
            load: a.load.clone(),
            load_cpus: a.load_cpus.clone(),
        }
    }
}

impl From<&OutputArgs> for OutputOptions {
    fn from(a: &OutputArgs) -> Self {
        OutputOptions {
            out: a.out.clone(),
            log_interval: a.log_interval.clone(),
            no_counters: a.no_counters,
        }
    }
}

impl From<&TraceArgs> for TraceOptions {
    fn from(a: &TraceArgs) -> Self {
        TraceOptions {
            trace: a.trace,
            explain_above: a.explain_above.clone(),
            backend: a.trace_backend,
        }
    }
}

impl LatencyArgs {
    fn options(&self, interval_step: Option<&str>) -> LatencyOptions {
        LatencyOptions {
            interval: self.interval.clone(),
            distance: self.distance.clone(),
            interval_step: interval_step.map(String::from),
            wake: self.wake,
            clock: self.clock,
            policy: self.policy,
            deadline: self.deadline.clone(),
            under: self.under.clone(),
        }
    }
}

impl From<&SenderArgs> for SenderOptions {
    fn from(a: &SenderArgs) -> Self {
        SenderOptions {
            sender_cpu: a.sender_cpu.clone(),
            sender_priority: a.sender_priority,
            ipc_between: a.ipc_between.clone(),
            ipc_pace: a.ipc_pace.clone(),
        }
    }
}

impl From<&InversionArgs> for InversionOptions {
    fn from(a: &InversionArgs) -> Self {
        InversionOptions {
            hold: a.hold.clone(),
            hog: a.hog.clone(),
            no_pi: a.no_pi,
        }
    }
}

impl From<&ActionArgs> for ActionOptions {
    fn from(a: &ActionArgs) -> Self {
        ActionOptions {
            on_threshold: a.on_threshold.clone(),
            on_end: a.on_end.clone(),
            action_gap: a.action_gap.clone(),
            action_wait: a.action_wait.clone(),
            snapshot_limit: a.snapshot_limit.clone(),
        }
    }
}

impl LatencyRunArgs {
    /// A latency run that ends, with `scenario` (a sweep level has none).
    pub fn options(&self, scenario: Option<&Path>) -> LatencyRunOptions {
        LatencyRunOptions {
            kind: MeasuredKindRow::default_kind(),
            shared: SharedOptions {
                length: Some(self.length.options(self.loops, scenario)),
                cpus: (&self.cpus).into(),
                loads: (&self.loads).into(),
                output: (&self.output).into(),
                trace: (&self.trace).into(),
                budget: self.budget.budget.clone(),
            },
            latency: self.latency.options(self.interval_step.as_deref()),
            sender: (&self.sender).into(),
            inversion: (&self.inversion).into(),
            records: RecordOptions {
                samples: self.samples_and_json.samples,
                samples_format: self.samples_format,
                summary_every: self.summary_every,
            },
        }
    }
}

impl RunArgs {
    /// `run`'s groups: all of them, and the kind they measure.
    pub fn options(&self) -> LatencyRunOptions {
        LatencyRunOptions {
            kind: self.kind,
            ..self.run.options(self.scenario.scenario.as_deref())
        }
    }

    pub(crate) fn action_options(&self) -> ActionOptions {
        (&self.actions).into()
    }
}

impl MonitorArgs {
    /// The latency groups a monitor has: no length (it runs until stopped), no growing
    /// period, and nothing that would grow without bound (samples.bin, wakeup summaries).
    pub fn options(&self) -> LatencyRunOptions {
        LatencyRunOptions {
            kind: MeasuredKindRow::default_kind(),
            shared: SharedOptions {
                length: None,
                cpus: (&self.cpus).into(),
                loads: (&self.loads).into(),
                output: (&self.output).into(),
                trace: (&self.trace).into(),
                budget: self.budget.budget.clone(),
            },
            latency: self.latency.options(None),
            sender: (&self.sender).into(),
            inversion: (&self.inversion).into(),
            records: RecordOptions::default(),
        }
    }

    pub(crate) fn action_options(&self) -> ActionOptions {
        (&self.actions).into()
    }
}

impl NoiseArgs {
    /// `noise`'s groups: the shared ones (no `--loops`) and the noise group.
    pub fn options(&self) -> NoiseRunOptions {
        NoiseRunOptions {
            shared: SharedOptions {
                length: Some(self.length.options(None, self.scenario.scenario.as_deref())),
                cpus: (&self.cpus).into(),
                loads: (&self.loads).into(),
                output: (&self.output).into(),
                trace: (&self.trace).into(),
                budget: self.budget.budget.clone(),
            },
            noise: NoiseOptions {
                threshold: self.noise.threshold.clone(),
                clock: self.noise.clock.clone(),
                policy: self.noise.policy,
            },
            samples: self.samples_and_json.samples,
        }
    }
}
